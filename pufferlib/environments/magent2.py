"""MAgent2's grid worlds (`magent2`), hundreds of agents per env, through the PettingZoo emulation:
`magent2_battle`, `magent2_battlefield`, `magent2_adversarial_pursuit`, `magent2_gather`,
`magent2_tiger_deer`, `magent2_combined_arms`.

One row per agent (`possible_agents` order: the first team, then the second). Every agent acts at once
(parallel API). Agents die and leave the episode: a dead agent's row has a zero observation, zero
reward and mask False from the step after its death, so it stays out of the rollout; the episode ends
when a team is wiped out (battle) or at `max_cycles` (truncations), and all rows start the next one.

Every row has one observation space and one action space, as the emulation lays every agent out as
the same row:
- where roles (the agent name before `_<index>`) see windows of different sizes (adversarial_pursuit:
  predators 10x10, prey 9x9), each view is centred in the largest, zero-padded around it;
- where roles differ in any way, each row ends with one constant channel per role (a one-hot of
  its role) so one shared policy can tell them apart; battle and battlefield, whose two sides are
  mirror images, get none, so a policy plays either side alike;
- where roles have different numbers of actions, the action space is the largest Discrete and each
  row's action mask (`env.action_masks`) allows only its own role's actions.

Two teams as two seats (`two_player=True`, battle and battlefield only; `puffer league` turns it on):
each row is a whole team. Its observation stacks every member's view ([members, 13, 13, 5]: a dead
member's is zeros), its action is MultiDiscrete (one move per member; a dead member's is ignored),
its reward is its members' summed reward minus the other team's (zero-sum, so a positive return is a
won battle on points) and the episode is the battle. This is what lets pufferlib/arena.py, which seats
one learner row per game, play team against team without knowing about teams.

Against a random team (`random_opponent=True`, battle and battlefield only): the rows are the first
team's agents (red) alone, and the second team (blue) moves uniformly at random inside the env, drawn
from a generator seeded by reset(seed). The episode ends when a team is wiped out or at `max_cycles`,
and its episode stats say who won (`outcome`): `perf` is 1 for a win (more agents left than blue: a
wiped-out team has none), 0.5 for a draw (as many) and 0 for a loss, with `kills`, `deaths` and both teams'
summed returns beside it. This is how a policy is measured against (and trained
against) a fixed opponent, without the league.

kwargs go to the task's parallel_env (map_size, max_cycles, minimap_mode, step_reward, ...).
"""
import importlib
from types import SimpleNamespace
from typing import Any

import numpy as np

from pufferlib.emulation import PettingZooPufferEnv
from pufferlib.environments import absent, install_line
from pufferlib.environments._support import check_name, lazy_policy
from pufferlib.pufferenv import APIUsageError, MissingDependencyError, PufferEnv

# name -> module under magent2.environments
TASKS = {
    'magent2_battle': 'battle_v4',
    'magent2_battlefield': 'battlefield_v5',
    'magent2_adversarial_pursuit': 'adversarial_pursuit_v4',
    'magent2_gather': 'gather_v5',
    'magent2_tiger_deer': 'tiger_deer_v4',
    'magent2_combined_arms': 'combined_arms_v6',
}
TWO_TEAMS = ('magent2_battle', 'magent2_battlefield')  # mirror-image sides: playable by `puffer league`
EXTRA = 'magent2'


def env_names() -> list[str]:
    return list(TASKS)


def make(name: str, buf: SimpleNamespace | None = None, seed: int | None = None, two_player: bool = False,
         random_opponent: bool = False, **kwargs: Any) -> PufferEnv:
    check_name(name, env_names(), 'MAgent2')
    for option, value in (('two_player', two_player), ('random_opponent', random_opponent)):
        if not isinstance(value, bool):
            raise APIUsageError(f'{name}: {option} must be true or false, got {value!r}')
        if value and name not in TWO_TEAMS:
            raise APIUsageError(f'{name} has no two mirror-image teams; {option}=True works for '
                                f'{", ".join(TWO_TEAMS)}')
    if two_player and random_opponent:
        raise APIUsageError(f'{name}: two_player (team against team, for the league) and random_opponent (one '
                            'team against a random one) exclude each other: turn one of them off')
    if absent('magent2'):
        raise MissingDependencyError(f'{name} needs magent2: {install_line(EXTRA)}')
    module = importlib.import_module(f'magent2.environments.{TASKS[name]}')
    if random_opponent:
        return VersusRandomEnv(env_creator=lambda: RandomOpponent(module.parallel_env(**kwargs)), buf=buf, seed=seed,
                               action_mask='none')
    if two_player:
        return PettingZooPufferEnv(env_creator=lambda: TeamSeats(module.parallel_env(**kwargs)), buf=buf, seed=seed,
                                   action_mask='none')
    padded = Padded(module.parallel_env(**kwargs))  # spaces only: each env process builds its own
    mask = 'info' if padded.masked else 'none'
    padded.close()
    return PettingZooPufferEnv(env_creator=lambda: Padded(module.parallel_env(**kwargs)), buf=buf, seed=seed,
                               action_mask=mask)


def _role(agent: str) -> str:
    return agent.rsplit('_', 1)[0]


class Padded:
    """A MAgent2 ParallelEnv whose agents share one observation and one action space (module docstring)."""

    def __init__(self, env: Any) -> None:
        from gymnasium import spaces
        self.env = env
        self.possible_agents = list(env.possible_agents)
        self.metadata = getattr(env, 'metadata', {})
        self.render_mode = getattr(env, 'render_mode', None)
        roles = list(dict.fromkeys(_role(agent) for agent in self.possible_agents))
        first = {role: next(a for a in self.possible_agents if _role(a) == role) for role in roles}
        obs_spaces = {role: env.observation_space(first[role]) for role in roles}
        actions = {role: int(env.action_space(first[role]).n) for role in roles}
        shapes = {role: tuple(space.shape) for role, space in obs_spaces.items()}
        self.height = max(shape[0] for shape in shapes.values())
        self.width = max(shape[1] for shape in shapes.values())
        self.channels = max(shape[2] for shape in shapes.values())
        self.same = len(set(shapes.values())) == 1 and len(set(actions.values())) == 1
        mirror = len(roles) == 2 and self.same and set(roles) == {'red', 'blue'}
        self.roles = 0 if self.same and (len(roles) == 1 or mirror) else len(roles)
        self.role_of = {agent: roles.index(_role(agent)) for agent in self.possible_agents}
        self.shape_of = {agent: shapes[_role(agent)] for agent in self.possible_agents}
        self.actions = max(actions.values())
        self.masked = len(set(actions.values())) > 1
        self.legal = {role: np.arange(self.actions) < actions[role] for role in roles}
        high = max(float(np.max(space.high)) for space in obs_spaces.values())
        self.space = spaces.Box(0.0, max(high, 1.0), (self.height, self.width, self.channels + self.roles),
                                np.float32)
        self.action_space_ = spaces.Discrete(self.actions)

    @property
    def agents(self) -> list[str]:
        return list(self.env.agents)

    def observation_space(self, agent: str) -> Any:
        return self.space

    def action_space(self, agent: str) -> Any:
        return self.action_space_

    def _pad(self, observations: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if not self.roles and self.space.shape == next(iter(self.shape_of.values()), None):
            return observations  # one role, or mirror-image teams: MAgent2's own rows
        out = {}
        for agent, ob in observations.items():
            row = np.zeros(self.space.shape, np.float32)
            h, w, c = self.shape_of[agent]
            top, left = (self.height - h) // 2, (self.width - w) // 2
            row[top:top + h, left:left + w, :c] = ob
            if self.roles:
                row[:, :, self.channels + self.role_of[agent]] = 1.0
            out[agent] = row
        return out

    def _masks(self, observations: dict[str, np.ndarray], infos: dict[str, dict]) -> dict[str, dict]:
        if not self.masked:
            return infos
        # Every agent observed this step (those that just died too: the emulation reads their rows).
        return {agent: {**infos.get(agent, {}), 'action_mask': self.legal[_role(agent)]} for agent in observations}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        observations, infos = self.env.reset(seed=seed, options=options)
        return self._pad(observations), self._masks(observations, infos)

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        return self._pad(observations), rewards, terminations, truncations, self._masks(observations, infos)

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def _two_teams(env: Any, option: str) -> list[str]:
    """The two team names of a battle env, in agent order; an error naming `option` where there are not two."""
    teams = list(dict.fromkeys(_role(agent) for agent in env.possible_agents))
    if len(teams) != 2:
        raise APIUsageError(f'{option}=True needs two teams, got {teams}')
    return teams


class TeamSeats:
    """A two-team MAgent2 ParallelEnv as a two-agent one: each team is one agent (module docstring)."""

    def __init__(self, env: Any) -> None:
        from gymnasium import spaces
        self.env = env
        self.metadata = getattr(env, 'metadata', {})
        self.render_mode = getattr(env, 'render_mode', None)
        teams = _two_teams(env, 'two_player')
        self.possible_agents = teams
        self.members = {team: [a for a in env.possible_agents if _role(a) == team] for team in teams}
        sizes = {len(m) for m in self.members.values()}
        if len(sizes) != 1:
            counts = [len(m) for m in self.members.values()]
            raise APIUsageError(f'two_player=True needs teams of one size, got {counts}')
        self.size = sizes.pop()
        member_space = env.observation_space(env.possible_agents[0])
        self.member_shape = tuple(member_space.shape)
        self.space = spaces.Box(0.0, float(np.max(member_space.high)), (self.size, *self.member_shape), np.float32)
        self.moves = int(env.action_space(env.possible_agents[0]).n)
        self.action_space_ = spaces.MultiDiscrete([self.moves] * self.size)
        self._agents: list[str] = []

    @property
    def agents(self) -> list[str]:
        return list(self._agents)

    def observation_space(self, agent: str) -> Any:
        return self.space

    def action_space(self, agent: str) -> Any:
        return self.action_space_

    def _gather(self, observations: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = {}
        for team in self._agents:
            stacked = np.zeros(self.space.shape, np.float32)
            for i, agent in enumerate(self.members[team]):
                ob = observations.get(agent)
                if ob is not None:
                    stacked[i] = ob
            out[team] = stacked
        return out

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        observations, _ = self.env.reset(seed=seed, options=options)
        self._agents = list(self.possible_agents)
        return self._gather(observations), {team: {} for team in self._agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        live = set(self.env.agents)
        moves = {}
        for team, action in actions.items():
            for agent, move in zip(self.members[team], np.asarray(action).ravel()):
                if agent in live:
                    moves[agent] = int(move)
        observations, rewards, terminations, truncations, _ = self.env.step(moves)
        totals = {team: sum(rewards.get(agent, 0.0) for agent in self.members[team]) for team in self._agents}
        red, blue = self._agents
        team_rewards = {red: totals[red] - totals[blue], blue: totals[blue] - totals[red]}
        over = not self.env.agents
        truncated = over and any(truncations.values()) and not self._wiped_out()
        out = self._gather(observations)
        teams = list(self._agents)
        if over:
            self._agents = []
        return (out, team_rewards, {t: over and not truncated for t in teams}, {t: truncated for t in teams},
                {t: {} for t in teams})

    def _wiped_out(self) -> bool:
        sizes = getattr(self.env.unwrapped if hasattr(self.env, 'unwrapped') else self.env, 'team_sizes', None)
        return sizes is not None and min(int(s) for s in sizes) == 0

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def _team_counts(env: Any) -> list[int]:
    """Live agents per team, from MAgent2's engine: after a step that wipes a team out its ParallelEnv
    reports every agent done and leaves `team_sizes` as they were before the step."""
    raw = env.unwrapped if hasattr(env, 'unwrapped') else env
    return [int(raw.env.get_num(handle)) for handle in raw.handles]


class RandomOpponent:
    """A two-team MAgent2 ParallelEnv whose second team moves uniformly at random; its agents are the
    first team's alone (module docstring). `outcome` holds the stats of the last episode that ended."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.metadata = getattr(env, 'metadata', {})
        self.render_mode = getattr(env, 'render_mode', None)
        self.team, self.other = _two_teams(env, 'random_opponent')
        self.possible_agents = [a for a in env.possible_agents if _role(a) == self.team]
        self.moves = int(env.action_space(env.possible_agents[-1]).n)
        self.rng = np.random.default_rng()
        self.outcome: dict[str, float] = {}
        self._agents: list[str] = []
        self._opponents: list[str] = []
        self._returns = np.zeros(2)
        self._start = [0, 0]

    @property
    def agents(self) -> list[str]:
        return self._agents

    def observation_space(self, agent: str) -> Any:
        return self.env.observation_space(agent)

    def action_space(self, agent: str) -> Any:
        return self.env.action_space(agent)

    def _split(self) -> None:
        team = self.team
        self._agents = [a for a in self.env.agents if _role(a) == team]
        self._opponents = [a for a in self.env.agents if _role(a) != team]

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        observations, infos = self.env.reset(seed=seed, options=options)
        self._split()
        self._returns[:] = 0
        self._start = _team_counts(self.env)
        return ({a: observations[a] for a in self._agents}, {a: infos.get(a, {}) for a in self._agents})

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        moves = dict(actions)
        moves.update(zip(self._opponents, self.rng.integers(0, self.moves, len(self._opponents)).tolist()))
        ours = list(self._agents)
        observations, rewards, terminations, truncations, infos = self.env.step(moves)
        self._returns[0] += sum(rewards.get(a, 0.0) for a in ours)
        self._returns[1] += sum(rewards.get(a, 0.0) for a in self._opponents)
        self._split()
        counts = _team_counts(self.env)
        if self._agents and counts[1] == 0:  # our side won but the env plays on: the battle is over
            terminations = {**terminations, **{a: True for a in self._agents}}
            self._agents = []
        if not self._agents:
            self._record(*counts)
            self._opponents = []
        return ({a: observations[a] for a in ours}, {a: rewards[a] for a in ours}, {a: terminations[a] for a in ours},
                {a: truncations[a] for a in ours}, {a: infos.get(a, {}) for a in ours})

    def _record(self, ours: int, theirs: int) -> None:
        """Who won: the side with more agents left at the end (a wiped-out side has none); as many on each
        side is a draw. Not the team returns: they include the attack penalty, so a team that never
        attacks would out-score a random one without a fight."""
        self.outcome = {'perf': (float(np.sign(ours - theirs)) + 1) / 2,
                        'survivors': float(ours), 'opponent_survivors': float(theirs),
                        'kills': float(self._start[1] - theirs), 'deaths': float(self._start[0] - ours),
                        'team_return': float(self._returns[0]), 'opponent_return': float(self._returns[1])}

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


class VersusRandomEnv(PettingZooPufferEnv):
    """The emulated RandomOpponent: each episode's stats carry its `outcome` (who won)."""

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        observations, rewards, terminals, truncations, infos = super().step(actions)
        if infos:
            infos[0].update(self.env.outcome)
        return observations, rewards, terminals, truncations, infos


def _build_policy() -> type:
    """The family's policy class, defined here because it needs torch (see lazy_policy)."""
    import torch
    from torch import nn

    from pufferlib import distributions, models

    class Policy(models.Policy):
        """A small conv net over each agent's view ([H, W, C] float, MAgent2's own scale).

        With one row per agent it is an ordinary per-agent policy. With team rows (`two_player=True`:
        observations [members, H, W, C], MultiDiscrete actions) the same net runs on every member, shares
        its weights across them, and the team's value is the mean of its members' values (a dead member's
        zero view counts too: the value learns what a thinned team is worth)."""

        def __init__(self, env: Any, hidden_size: int = 128, channels: int = 32) -> None:
            space = env.single_action_space
            self.team = hasattr(space, 'nvec')
            if self.team:
                # The decoder below is per member: build the base heads for one member's moves.
                from gymnasium import spaces
                member_env = SimpleNamespace(single_observation_space=env.single_observation_space,
                                             single_action_space=spaces.Discrete(int(space.nvec[0])),
                                             obs_dtype=getattr(env, 'obs_dtype', None))
                super().__init__(member_env, hidden_size)
                self.members, self.moves = len(space.nvec), int(space.nvec[0])
            else:
                super().__init__(env, hidden_size)
            shape = tuple(env.single_observation_space.shape)
            self.view = shape[-3:]
            if len(self.view) != 3:
                raise APIUsageError(f'the MAgent2 policy reads [H, W, C] views, got observations of shape {shape}')
            h, w, c = self.view
            self.conv = nn.Sequential(
                models.layer_init(nn.Conv2d(c, channels, 3)), nn.ReLU(),
                models.layer_init(nn.Conv2d(channels, channels, 3)), nn.ReLU(), nn.Flatten())
            with torch.no_grad():
                features = int(self.conv(torch.zeros(1, c, h, w)).shape[1])
            self.fc = nn.Sequential(models.layer_init(nn.Linear(features, hidden_size)), nn.ReLU())

        def encode_observations(self, obs: torch.Tensor, state: models.State | None = None) -> torch.Tensor:
            x = obs.reshape(-1, *self.view).float()
            return self.fc(self.conv(x.permute(0, 3, 1, 2)))

        def decode_actions(self, hidden: torch.Tensor) -> tuple[distributions.Logits, torch.Tensor]:
            if not self.team:
                return super().decode_actions(hidden)
            # The base heads per member: logits [B * members, moves] (a Discrete head), value [B * members].
            logits = self.actor(hidden).reshape(-1, self.members, self.moves)
            value = self.value(hidden).reshape(-1, self.members)
            return tuple(logits.unbind(1)), value.mean(1)

    return Policy


__getattr__ = lazy_policy(__name__, _build_policy)
