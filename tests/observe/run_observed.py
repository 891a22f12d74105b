"""A small emulator run with observers attached, for the subprocess tests (SIGTERM, real Prometheus).

    python tests/observe/run_observed.py --clock wall --speed 10 --metrics-port 0 --duration 120

Prints one line `READY url=<url or -> record=<dir or ->` once the cluster has a leader and observers
run, then keeps creating producers (`--new-topics` every 10 emulated seconds) so lookup counters move.
SIGTERM closes the recording as incomplete and exits 143 (the handler path the CLI will install).
The lead will replace this with `pulsar-lb-emulator run --clock wall --speed 10 --metrics-port P`.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

import anyio

from emulator.cluster.cluster import Cluster
from emulator.cluster.load_source import FlatLoad
from emulator.observe.attach import observe
from emulator.observe.logs import configure_logging
from emulator.runtime import VirtualClock, WallClock, run

NS = "public/default"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--clock", choices=("virtual", "wall"), default="virtual")
    p.add_argument("--speed", type=float, default=10.0)
    p.add_argument("--metrics-port", type=int, default=None)
    p.add_argument("--record", default=None)
    p.add_argument("--record-interval", type=float, default=10.0)
    p.add_argument("--duration", type=float, default=120.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--topics", type=int, default=60)
    p.add_argument("--new-topics", type=int, default=5)
    args = p.parse_args(argv)
    clock = VirtualClock() if args.clock == "virtual" else WallClock(args.speed)
    configure_logging(clock, level="warning")          # logs to stderr; stdout carries READY
    load = FlatLoad(rate=200.0, msg_size=1024, broker_cores={"broker-1:8080": 1})

    async def scenario() -> None:
        async with Cluster.start(args.brokers, seed=args.seed, clock=clock, namespaces={NS: 8},
                                 load_source=load) as cluster:
            await cluster.wait_for_leader()
            async with observe(cluster, metrics_port=args.metrics_port, record_dir=args.record,
                               record_interval=args.record_interval,
                               run_info={"scenario": "run_observed", "seed": args.seed,
                                         "duration": args.duration}) as obs:

                def on_sigterm(signum: int, frame: object) -> None:
                    obs.close(complete=False)
                    os._exit(143)

                signal.signal(signal.SIGTERM, on_sigterm)
                print(f"READY url={obs.url or '-'} record={args.record or '-'}", flush=True)
                client = cluster.add_client()
                client.create_handles([f"persistent://{NS}/t-{i}" for i in range(args.topics)])
                n = args.topics
                while clock.now() < args.duration:
                    await anyio.sleep(10.0)
                    client.create_handles([f"persistent://{NS}/t-{i}" for i in range(n, n + args.new_topics)])
                    n += args.new_topics

    run(scenario, clock=clock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
