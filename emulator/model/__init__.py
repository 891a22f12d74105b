"""Layer 1: pure data and pure functions (config, load data, bundles and hashing). No I/O, no clock."""

from .config import ConfigError as ConfigError
from .config import ServiceConfig as ServiceConfig
from .loaddata import BrokerData as BrokerData
from .loaddata import BundleData as BundleData
from .loaddata import LoadData as LoadData
from .loaddata import LocalBrokerData as LocalBrokerData
from .loaddata import NamespaceBundleStats as NamespaceBundleStats
from .loaddata import ResourceUsage as ResourceUsage
from .loaddata import TimeAverageBrokerData as TimeAverageBrokerData
from .loaddata import TimeAverageMessageData as TimeAverageMessageData
from .loaddata import need_broker_data_update as need_broker_data_update
from . import bundles as bundles
