"""puffer_stochastic: the optimal policy plays action 0 with probability p, action 1 otherwise.

Reward at the end of each `horizon`-step episode: 1 - |q - p|, q being the fraction of action 0
played; a deterministic policy earns at most max(p, 1 - p).
"""
