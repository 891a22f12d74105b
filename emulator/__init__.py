"""pulsar-lb-emulator: Apache Pulsar's Modular Load Manager as asyncio actors on a virtual clock.

The public API (a contract, see DESIGN.md) is re-exported here, each name from exactly one module.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model.config import ServiceConfig as ServiceConfig
    from .model.loaddata import BrokerData as BrokerData
    from .model.loaddata import BundleData as BundleData
    from .model.loaddata import LoadData as LoadData
    from .model.loaddata import LocalBrokerData as LocalBrokerData
    from .model.loaddata import NamespaceBundleStats as NamespaceBundleStats
    from .model.loaddata import ResourceUsage as ResourceUsage
    from .model.loaddata import TimeAverageBrokerData as TimeAverageBrokerData
    from .model.loaddata import TimeAverageMessageData as TimeAverageMessageData

_LAZY = {"ServiceConfig": ".model.config", **dict.fromkeys(
    ("BrokerData", "BundleData", "LoadData", "LocalBrokerData", "NamespaceBundleStats", "ResourceUsage",
     "TimeAverageBrokerData", "TimeAverageMessageData"), ".model.loaddata")}
"""Each public name's module, imported on first use (PEP 562): importing the package stays cheap, so
the command's SIGTERM handler (`__main__.console`) is in place before the ~0.1 s of numpy and the model."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = [
    "BrokerData",
    "BundleData",
    "LoadData",
    "LocalBrokerData",
    "NamespaceBundleStats",
    "ResourceUsage",
    "ServiceConfig",
    "TimeAverageBrokerData",
    "TimeAverageMessageData",
]
