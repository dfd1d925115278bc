"""puffer_connect4: Connect Four against a scripted opponent (win, else block, else random), or two seats.

+1 win, -1 loss or illegal move (full column), 0 draw. The action mask holds the open columns. With
two_player=True both players are agent rows (ocean/seats.h: only the row to move is live); every row sees
the board from its own side (+1 its pieces, -1 the opponent's), so one policy plays either seat.
"""
