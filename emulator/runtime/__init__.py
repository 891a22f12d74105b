"""The actor runtime and its clocks. Knows nothing of Pulsar.

Time: `VirtualClock` (deterministic, jumps over idle time; `VirtualEventLoop`) or `WallClock(speed)`
(`PacedEventLoop`: the same jumps, held back to real time x speed), chosen for a whole run by
`run(main, clock=...)`. Actors: `ActorSystem`,
`Actor` with `tell` / `ask` / `Reply`, supervision (`ActorDead`, `ActorFailure`). Randomness:
`derive_rng(seed, name)`. `sleep`: asyncio.sleep with fewer frames,
for the hot periodic loops. `run` raises the garbage collector's first threshold for the run
(`gc_tuned`) and moves a heap past 1 GiB onto huge pages (`huge_pages`).
"""

from .actor import Actor as Actor
from .actor import ActorSystem as ActorSystem
from .clock import DEFAULT_START_EPOCH_MS as DEFAULT_START_EPOCH_MS
from .clock import Clock as Clock
from .clock import VirtualClock as VirtualClock
from .clock import WallClock as WallClock
from .clock import epoch_ms as epoch_ms
from .clock import run as run
from .errors import ActorDead as ActorDead
from .errors import AskTimeout as AskTimeout
from .gc_policy import RUN_GC_THRESHOLD as RUN_GC_THRESHOLD
from .gc_policy import RUN_GC_THRESHOLD1 as RUN_GC_THRESHOLD1
from .gc_policy import gc_tuned as gc_tuned
from .huge_page_policy import huge_pages as huge_pages
from .paced_loop import PacedEventLoop as PacedEventLoop
from .paced_loop import WallLag as WallLag
from .reply import NO_REPLY as NO_REPLY
from .reply import Reply as Reply
from .rng import derive_rng as derive_rng
from .rng import derive_seed as derive_seed
from .sleep import sleep as sleep
from .supervision import ActorFailure as ActorFailure
from .virtual_loop import DeadlockError as DeadlockError
from .virtual_loop import VirtualEventLoop as VirtualEventLoop
from .virtual_loop import run_external as run_external
from .wall_loop import ScaledWallEventLoop as ScaledWallEventLoop
from .wall_loop import scaled_wall_loop_factory as scaled_wall_loop_factory

__all__ = [
    "NO_REPLY",
    "PacedEventLoop",
    "RUN_GC_THRESHOLD",
    "RUN_GC_THRESHOLD1",
    "Actor",
    "ActorDead",
    "ActorFailure",
    "ActorSystem",
    "AskTimeout",
    "Clock",
    "DEFAULT_START_EPOCH_MS",
    "DeadlockError",
    "Reply",
    "ScaledWallEventLoop",
    "VirtualClock",
    "VirtualEventLoop",
    "WallClock",
    "WallLag",
    "derive_rng",
    "derive_seed",
    "epoch_ms",
    "gc_tuned",
    "huge_pages",
    "run",
    "run_external",
    "scaled_wall_loop_factory",
    "sleep",
]
