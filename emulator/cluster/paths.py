"""Metadata-store node layout of the Modular Load Manager (pulsar-protocol.md §7)."""

LEADER = "/loadbalance/leader"
BROKERS = "/loadbalance/brokers"
BUNDLE_DATA = "/loadbalance/bundle-data"
BROKER_TIME_AVERAGE = "/loadbalance/broker-time-average"
NAMESPACE = "/namespace"
LOCAL_POLICIES = "/admin/local-policies"


def broker_path(broker_id: str) -> str:
    return f"{BROKERS}/{broker_id}"


def ownership_path(bundle: str) -> str:
    return f"{NAMESPACE}/{bundle}"


def bundle_data_path(bundle: str) -> str:
    return f"{BUNDLE_DATA}/{bundle}"


def time_average_path(broker_id: str) -> str:
    return f"{BROKER_TIME_AVERAGE}/{broker_id}"


def local_policies_path(namespace: str) -> str:
    return f"{LOCAL_POLICIES}/{namespace}"


def namespace_of_policies_path(path: str) -> str:
    return path[len(LOCAL_POLICIES) + 1 :]


# Cluster-wide policies (ClusterResources / NamespaceResources.IsolationPolicyResources): one node
# holding every isolation policy of the cluster as a JSON map name -> NamespaceIsolationData, and one
# node per failure domain.
ADMIN = "/admin"
CLUSTERS = "/admin/clusters"


def isolation_policies_path(cluster: str) -> str:
    return f"{CLUSTERS}/{cluster}/namespaceIsolationPolicies"


def failure_domains_root(cluster: str) -> str:
    return f"{CLUSTERS}/{cluster}/failureDomain"


def failure_domain_path(cluster: str, domain: str) -> str:
    return f"{CLUSTERS}/{cluster}/failureDomain/{domain}"


# Dynamic configuration (DynamicConfigurationResources.BROKER_SERVICE_CONFIGURATION_PATH): one persistent
# node holding every dynamically set key as a JSON map name -> string value; every broker watches it.
DYNAMIC_CONFIGURATION = "/admin/configuration"
