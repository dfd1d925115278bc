"""Flags for the smallest real training run the tests use: 2 x 32 rows, 16-step segments, so one epoch
is 1,024 steps in 4 minibatches of 256; no log rows."""
SMALL = ['--env.num-envs', '32', '--vec.num-envs', '2', '--vec.num-workers', '2', '--vec.batch-size', '1',
         '--train.bptt-horizon', '16', '--train.minibatch-size', '256', '--train.log-interval', '0']
