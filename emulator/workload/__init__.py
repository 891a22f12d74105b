"""The workload layer: scenario files, the traffic and resource models, and the driver of a run.

    from emulator.workload import library, start_scenario
    scenario = library.load_scenario("hot-topic")             # a built-in name or a TOML path
    async with start_scenario(scenario, start=emulated_cluster) as run:   # on the virtual loop
        tracker = UnavailabilityTracker(run.cluster.events)   # observers attach before the first await
        await run.sleep_until(scenario.duration)
        print(format_summary(summarize(run.cluster, run.cluster.decision_log, tracker)))

A runner can also assemble the parts itself: `conf = build.service_config(scenario, broker_conf,
overrides)`, `workload = Workload(scenario, conf=conf)`, `Cluster.start(brokers, conf=conf,
namespaces={}, load_source=workload.load_source, settings=build.cluster_settings(scenario))`, then
`await drive(cluster, scenario, workload)` (it returns once every event has been applied).
"""

from .build import Workload as Workload
from .driver import drive as drive
from .errors import ScenarioError as ScenarioError
from .load import WorkloadLoadSource as WorkloadLoadSource
from .resources import BrokerCapacity as BrokerCapacity
from .resources import ResourceModel as ResourceModel
from .resources import ResourceModelConstants as ResourceModelConstants
from .schema import Scenario as Scenario
from .session import ScenarioRun as ScenarioRun
from .session import start_scenario as start_scenario
from .traffic import TrafficModel as TrafficModel

__all__ = [
    "BrokerCapacity",
    "ResourceModel",
    "ResourceModelConstants",
    "Scenario",
    "ScenarioError",
    "ScenarioRun",
    "TrafficModel",
    "Workload",
    "WorkloadLoadSource",
    "drive",
    "start_scenario",
]
