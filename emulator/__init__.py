"""pulsar-lb-emulator: Apache Pulsar's Modular Load Manager as asyncio actors on a virtual clock.

The public API (a contract, see DESIGN.md) is re-exported here, each name from exactly one module.
"""

from .model.config import ServiceConfig as ServiceConfig
from .model.loaddata import BrokerData as BrokerData
from .model.loaddata import BundleData as BundleData
from .model.loaddata import LoadData as LoadData
from .model.loaddata import LocalBrokerData as LocalBrokerData
from .model.loaddata import NamespaceBundleStats as NamespaceBundleStats
from .model.loaddata import ResourceUsage as ResourceUsage
from .model.loaddata import TimeAverageBrokerData as TimeAverageBrokerData
from .model.loaddata import TimeAverageMessageData as TimeAverageMessageData

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
