"""Chapter 1's runs: the depth-scaling families, their narrower members, the longer budgets and the
peak-rate and beta2 sweeps, as configs built from the chapter's parameters.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from nmtscale.config import RunConfig, from_dict, override, with_numerics
from nmtscale.studies import sweeps

TEST_SETS = ["l10n", "story", "ding"]


def base_config(params: Mapping[str, Any]) -> RunConfig:
    """Chapter 1's base run config from its parameters (``params/01_bivariate_laws/<scale>.yaml``).

    Later chapters build their configs from this, so that a model chapter 1 trained is the same config, with
    the same hash, and comes from the run store instead of being trained again. `schedule` defaults to the
    inverse square root the runs before it were recorded with; ``params["numerics"]`` (engine keys -> values,
    as `config.LEGACY_NUMERICS`; {} for the engine's fast CPU path) says how each step runs.
    """
    steps = params["steps"]
    interval = steps // params["eval_points"]
    source = "params/01_bivariate_laws"
    raw = {
        "model": {"d_model": params["d_model"], "d_ff": params["d_ff"], "n_heads": params["n_heads"]},
        "data": {
            "test_sets": TEST_SETS,
            "vocab_size": params["vocab_size"],
            "max_train_pairs": params["max_train_pairs"],
        },
        "train": {
            "steps": steps,
            "max_tokens": params["max_tokens"],
            "warmup_steps": params["warmup_steps"],
            "schedule": params.get("schedule", "inverse_sqrt"),
            "optimizer": params["optimizer"],
            "lr": params["lr"],
            "checkpoint_interval": interval,
            "seed": params["seed"],
        },
        "eval": {"interval": interval, "final_fraction": params["final_fraction"]},
    }
    return from_dict(with_numerics(raw, params["numerics"], source), source)


def chapter_plan(params: Mapping[str, Any]) -> list[sweeps.PlannedRun]:
    """Chapter 1's depth-scaling runs (every direction of ``params["families"]``) from its parameters."""
    base = base_config(params)
    return [
        run
        for direction, depths in params["families"].items()
        for run in sweeps.depth_scaling_plan(
            base,
            direction,
            params["baseline_layers"],
            depths.get("encoder", []),
            depths.get("decoder", []),
            depths.get("symmetric", []),
            repeated=params["repeated"] if direction == "en-de" else [],
            n_seeds=params["n_seeds"],
            narrower=depths.get("narrower"),
        )
    ]


def long_plan(
    params: Mapping[str, Any], steps: int | None = None, models: Mapping[str, Sequence[int]] | None = None
) -> list[sweeps.PlannedRun]:
    """Chapter 1's longer-training check: the En->De baseline and the encoder, decoder and symmetric depths of
    `models` (default ``params["long_models"]``, the families' extremes), with the (enc, dec) models of its
    ``repeated`` trained with ``params["n_seeds"]`` seeds, each for `steps` updates (default
    ``params["long_steps"]``), evaluated as often as the short runs."""
    steps = params["long_steps"] if steps is None else steps
    models = params["long_models"] if models is None else models
    return sweeps.depth_scaling_plan(
        at_steps(base_config(params), steps, params["eval_points"]),
        "en-de",
        params["baseline_layers"],
        models.get("encoder", []),
        models.get("decoder", []),
        models.get("symmetric", []),
        repeated=models.get("repeated", []),
        n_seeds=params["n_seeds"],
        narrower=models.get("narrower"),
    )


def at_steps(base: RunConfig, steps: int, eval_points: int) -> RunConfig:
    """`base` trained for `steps` updates, evaluated and checkpointed `eval_points` times, as every budget of
    the chapter is."""
    interval = steps // eval_points
    return override(
        base, {"train.steps": steps, "train.checkpoint_interval": interval, "eval.interval": interval}
    )


BUDGET_KEYS = ("steps", "encoder", "decoder", "symmetric", "repeated", "narrower", "baseline")


def budget_plans(params: Mapping[str, Any]) -> list[list[sweeps.PlannedRun]]:
    """Every longer budget of chapter 1, shortest first: ``params["long_steps"]`` with ``long_models``, then
    each entry of ``params["longer_budgets"]`` (``{steps, encoder, decoder, symmetric, repeated, narrower,
    baseline}``: the encoder and decoder depths trained at that budget, by default ``long_models``, the
    symmetric depths, the (enc, dec) models trained with ``n_seeds`` seeds and the narrower models
    (`sweeps.depth_scaling_plan`), by default none, and whether the baseline is, by default true). A budget
    may cover fewer models than the one before, so that one family can be carried further while the other is
    not."""
    budgets = [{"steps": params["long_steps"], **params["long_models"]}]
    previous = params["long_steps"]
    for i, entry in enumerate(params.get("longer_budgets") or []):
        where = f"longer_budgets[{i}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("steps"), int):
            raise ValueError(
                f"{where}: expected {{steps: <int>, encoder: [...], decoder: [...]}}, got {entry!r}"
            )
        unknown = set(entry) - set(BUDGET_KEYS)
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)} ({', '.join(BUDGET_KEYS)})")
        if not isinstance(entry.get("baseline", True), bool):
            raise ValueError(f"{where}: baseline must be true or false, not {entry['baseline']!r}")
        if entry["steps"] <= previous:
            raise ValueError(f"{where}: steps {entry['steps']} must exceed the budget before it ({previous})")
        previous = entry["steps"]
        budgets.append({**params["long_models"], **entry})
    return [
        [
            run
            for run in long_plan(params, budget["steps"], budget)
            if budget.get("baseline", True) or run.approach != "baseline"
        ]
        for budget in budgets
    ]


MODEL_LABEL = re.compile(r"(\d+)L-(\d+)L")


# The hyperparameter sweeps (issue 47): each params key and the column its values are tabled under.
SWEEPS = {"lr_sweep": "lr", "beta2_sweep": "beta2"}


def sweep_value(cfg: RunConfig, column: str) -> float:
    """The value of a swept hyperparameter (`SWEEPS`' column) in run config `cfg`."""
    return cfg.train.lr if column == "lr" else cfg.train.adam_betas[1]


def hyperparameter_plan(params: Mapping[str, Any], sweep: str) -> list[sweeps.PlannedRun]:
    """Issue 47's sweep ``params[sweep]`` (a key of `SWEEPS`: the peak rate, "lr_sweep", or AdamW's beta2,
    "beta2_sweep"): En->De models named as in the paper ("2L-6L": a 2-layer encoder, a 6-layer decoder), each
    trained at the chapter's own value (its runs, same ids) and at every value listed for it, each run
    decaying to zero at ``params["steps"]``; a value listed twice is trained with a second seed. `approach`
    says which family the model extends from the baseline."""
    column = SWEEPS[sweep]
    upper = 1.0 if column == "beta2" else math.inf
    chapter = base_config(params)
    planned = []
    for label, values in params[sweep].items():
        depths = _model_depths(label, params, sweep)
        if any(not isinstance(v, int | float) or not 0 < v < upper for v in values):
            within = "in (0, 1)" if column == "beta2" else "positive numbers"
            raise ValueError(f"{sweep}: {label}: the values must be {within}, not {list(values)}")
        times_seen: collections.Counter = collections.Counter()
        for value in [sweep_value(chapter, column), *values]:
            seed = params["seed"] + times_seen[value]
            times_seen[value] += 1
            setting = (
                {"train.lr": value}
                if column == "lr"
                else {"train.adam_betas": [chapter.train.adam_betas[0], value]}
            )
            planned.append(_depth_run(override(chapter, {**setting, "train.seed": seed}), *depths))
    return planned


SCHEDULE_CHECK_KEYS = ("schedule", "runs")


def schedule_check_plan(params: Mapping[str, Any]) -> list[sweeps.PlannedRun]:
    """Issue 47's schedule check, ``params["schedule_check"]``: ``{schedule, runs}`` (empty for none), where
    ``runs`` maps a budget (updates, the chapter's or longer) to the En->De models trained at it and their
    seeds (``{4000: {2L-2L: 3, 2L-6L: 1}}``: seeds ``seed`` .. ``seed + n - 1``). Each run is planned under
    ``schedule`` and under the chapter's own ``schedule`` (the chapter's runs, same ids, where it trains that
    model with that seed at that budget), checked runs first. At least one model needs two seeds at one
    budget: the seed std the check is measured in. Under "constant_cooldown" the runs of one model and seed
    share a trunk: each longer budget costs its stretch and its cool-down."""
    check = params.get("schedule_check") or {}
    if not check:
        return []
    where = "schedule_check"
    if not isinstance(check, Mapping) or set(check) != set(SCHEDULE_CHECK_KEYS):
        raise ValueError(
            f"{where}: expected {{schedule: <name>, runs: {{<steps>: {{<model>: <seeds>, ...}}, ...}}}}, "
            f"got {check!r}"
        )
    if check["schedule"] == params["schedule"]:
        raise ValueError(f"{where}: schedule {check['schedule']!r} is the chapter's own: nothing to compare")
    planned = check["runs"]
    if not isinstance(planned, Mapping) or not planned:
        raise ValueError(
            f"{where}: runs must map budgets to models, such as {{4000: {{2L-2L: 3}}}}: {planned!r}"
        )
    to_plan = []
    for budget, models in planned.items():
        # papermill hands a chapter its parameters as JSON, whose keys are strings
        steps = int(budget) if isinstance(budget, str) and budget.isdigit() else budget
        if not isinstance(steps, int) or steps < params["steps"]:
            raise ValueError(
                f"{where}: runs: budget {steps!r} is not an integer >= the chapter's {params['steps']}"
            )
        if not isinstance(models, Mapping) or not models:
            raise ValueError(f"{where}: runs: {steps}: expected {{<model>: <seeds>}}, got {models!r}")
        for label, seeds in models.items():
            if not isinstance(seeds, int) or seeds < 1:
                raise ValueError(
                    f"{where}: runs: {steps}: {label}: seeds must be an integer >= 1, not {seeds!r}"
                )
            depths = _model_depths(label, params, f"{where}: runs: {steps}")
            to_plan += [(steps, depths, seed) for seed in range(params["seed"], params["seed"] + seeds)]
    if all(seeds < 2 for models in planned.values() for seeds in models.values()):
        raise ValueError(
            f"{where}: runs: no model has two seeds at a budget: nothing to measure the check in"
        )
    return [
        _depth_run(_schedule_config(params, steps, schedule, seed), *depths)
        for schedule in (check["schedule"], params["schedule"])
        for steps, depths, seed in to_plan
    ]


def model_run(
    params: Mapping[str, Any],
    label: str,
    steps: int,
    schedule: str,
    direction: str = "en-de",
    where: str = "model",
) -> sweeps.PlannedRun:
    """Chapter 1's model `label` ('2L-6L') on `direction` at budget `steps` under `schedule`, first seed: the
    run chapter 1 trains or checks with these settings (same config, same run id), for a later chapter that
    uses one of its models; a name in none of its families raises ValueError under `where`."""
    enc, dec, approach = _model_depths(label, params, where)
    cfg = _schedule_config(params, steps, schedule, params["seed"])
    (run,) = sweeps.depth_scaling_plan(cfg, direction, [enc, dec])
    return dataclasses.replace(run, approach=approach)


def _schedule_config(params: Mapping[str, Any], steps: int, schedule: str, seed: int) -> RunConfig:
    """Chapter 1's base config at budget `steps` under `schedule` with `seed`."""
    base = override(base_config(params), {"train.schedule": schedule, "train.seed": seed})
    return at_steps(base, steps, params["eval_points"])


def _model_depths(label: str, params: Mapping[str, Any], where: str) -> tuple[int, int, str]:
    """The encoder and decoder depths of the En->De model named `label` as in the paper ('2L-6L': a 2-layer
    encoder, a 6-layer decoder) and the family it belongs to (`sweeps.APPROACHES`: the baseline, the encoder
    or decoder family around it, or the symmetric models); a name that is not a model, or a model in none of
    them, raises ValueError under `where`."""
    match = MODEL_LABEL.fullmatch(str(label))
    if match is None:
        raise ValueError(f"{where}: {label!r} is not a model such as '2L-6L' (encoder, decoder layers)")
    enc, dec = (int(group) for group in match.groups())
    enc_bar, dec_bar = params["baseline_layers"]
    if (enc, dec) == (enc_bar, dec_bar):
        approach = "baseline"
    elif dec == dec_bar:
        approach = "encoder"
    elif enc == enc_bar:
        approach = "decoder"
    elif enc == dec:
        approach = "symmetric"
    else:
        raise ValueError(
            f"{where}: {label!r} is neither the baseline {enc_bar}L-{dec_bar}L nor a member of its encoder, "
            "decoder or symmetric family"
        )
    return enc, dec, approach


def _depth_run(base: RunConfig, enc: int, dec: int, approach: str) -> sweeps.PlannedRun:
    """The En->De run of an `enc`-layer encoder and `dec`-layer decoder from config `base`."""
    (run,) = sweeps.depth_scaling_plan(base, "en-de", [enc, dec])
    return dataclasses.replace(run, approach=approach)
