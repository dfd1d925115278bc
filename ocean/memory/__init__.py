"""puffer_memory: see a random sequence, wait, recite it; needs a recurrent policy.

Episodes last 2 * length + delay steps. In the recall phase each correct symbol pays 1/length;
actions outside it are ignored. Chance level is 1/num_symbols, perfect memory earns 1.
"""
