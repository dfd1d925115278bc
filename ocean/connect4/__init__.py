"""puffer_connect4: Connect Four against a scripted opponent (win, else block, else random).

+1 win, -1 loss or illegal move (full column), 0 draw; the agent moves first.
"""
