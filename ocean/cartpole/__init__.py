"""puffer_cartpole: Gymnasium CartPole-v1 dynamics in C (the "cartpole-like" benchmark row).

Same constants and termination as CartPole-v1; reward 1 per step, truncated at max_steps.
"""
