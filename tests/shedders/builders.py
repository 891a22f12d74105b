"""Literal load-data Structs for the shedder tests (no runtime, no actors)."""

from __future__ import annotations

from collections.abc import Iterable

from emulator.model.loaddata import (
    BrokerData,
    BundleData,
    LocalBrokerData,
    ResourceUsage,
    TimeAverageMessageData,
)

MIB = 1024 * 1024


def bundle(
    thr_in: float = 0.0, thr_out: float = 0.0, rate_in: float = 0.0, rate_out: float = 0.0
) -> BundleData:
    """BundleData whose short-term window holds the given traffic (the long-term one is empty)."""
    return BundleData(
        short_term_data=TimeAverageMessageData(
            max_samples=10,
            num_samples=10,
            msg_rate_in=rate_in,
            msg_rate_out=rate_out,
            msg_throughput_in=thr_in,
            msg_throughput_out=thr_out,
        ),
        long_term_data=TimeAverageMessageData(max_samples=1000),
    )


def usage(pair: tuple[float, float] | None) -> ResourceUsage:
    return ResourceUsage() if pair is None else ResourceUsage(usage=pair[0], limit=pair[1])


def broker(
    bundles: Iterable[str] = (),
    *,
    cpu: tuple[float, float] | None = None,
    direct: tuple[float, float] | None = None,
    bw_in: tuple[float, float] | None = None,
    bw_out: tuple[float, float] | None = None,
    thr_in: float = 0.0,
    thr_out: float = 0.0,
    rate_in: float = 0.0,
    rate_out: float = 0.0,
) -> BrokerData:
    """BrokerData with a LocalBrokerData as a load report would carry it."""
    return BrokerData(
        local_data=LocalBrokerData(
            cpu=usage(cpu),
            direct_memory=usage(direct),
            bandwidth_in=usage(bw_in),
            bandwidth_out=usage(bw_out),
            msg_throughput_in=thr_in,
            msg_throughput_out=thr_out,
            msg_rate_in=rate_in,
            msg_rate_out=rate_out,
            bundles=set(bundles),
        )
    )
