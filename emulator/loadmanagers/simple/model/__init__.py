"""Pulsar's SimpleLoadManagerImpl as pure data and decisions (no actors, clock, I/O or logging).

The load manager Pulsar had before the Modular one, still selectable by `loadManagerClassName` and the
fallback when a configured class cannot be created. One module per concern:

| module | Pulsar |
|---|---|
| `report` | `LoadReport`, `SystemResourceUsage` (JSON under `/loadbalance/brokers/<broker>`), load levels |
| `reporting` | `writeLoadReportOnZookeeper` (when to write), `generateLoadReportForcefully` (what) |
| `quota` | `ResourceQuota`, `BundlesQuotas` paths and defaults, the learnt (dynamic) quotas |
| `settings` | the deprecated broker.conf keys and their `/loadbalance/settings/*` overrides |
| `ranking` | `ResourceUnitRanking`, `doLoadRanking` |
| `placement` | `getLeastLoaded`: leastLoadedServer, leastMsgPerSecond, weightedRandomSelection |
| `bundle_order` | `NamespaceBundleStats` comparisons, `getSortedBundleStats` |
| `shedding` | `doLoadShedding` |
| `split` | `doNamespaceBundleSplit` |

Every broker runs a SimpleLoadManagerImpl: each ranks all brokers whenever a report changes, and
with a centralized strategy (`SimpleSettings.is_centralized`) lookups go to the leader, which
decides; the leader alone sheds and writes quotas, and each broker splits its own bundles.
"""

from .placement import PlacementState as PlacementState
from .placement import get_least_loaded_broker as get_least_loaded_broker
from .quota import INITIAL_QUOTA as INITIAL_QUOTA
from .quota import QuotaStore as QuotaStore
from .quota import RealtimeQuotas as RealtimeQuotas
from .quota import ResourceQuota as ResourceQuota
from .quota import update_realtime_resource_quota as update_realtime_resource_quota
from .ranking import ResourceUnitRanking as ResourceUnitRanking
from .ranking import do_load_ranking as do_load_ranking
from .report import LoadReport as LoadReport
from .report import SystemResourceUsage as SystemResourceUsage
from .report import decode_load_report as decode_load_report
from .report import encode_load_report as encode_load_report
from .settings import SimpleSettings as SimpleSettings
from .shedding import SheddingPlan as SheddingPlan
from .shedding import do_load_shedding as do_load_shedding
from .split import SplitPlan as SplitPlan
from .split import do_namespace_bundle_split as do_namespace_bundle_split
