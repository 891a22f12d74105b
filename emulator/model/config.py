"""The public import path of the broker configuration: `ServiceConfig` and its dynamic-configuration rules.

Each key is declared once, as a field of `ServiceConfig` with its `Setting` (service_config.py); the
machinery that reads the declarations and derives every table is setting.py, the text forms (broker.conf
syntax, Java's rendering) are properties.py, and the rules of `pulsar-admin brokers update-dynamic-config`
(which keys are dynamic, the 412 answers, the runtime view) are dynamic_config.py.
"""

from __future__ import annotations

from .dynamic_config import DYNAMIC_KEYS as DYNAMIC_KEYS
from .dynamic_config import INVALID_VALUE_REASON as INVALID_VALUE_REASON
from .dynamic_config import NON_DYNAMIC_DELETE_REASON as NON_DYNAMIC_DELETE_REASON
from .dynamic_config import NON_DYNAMIC_UPDATE_REASON as NON_DYNAMIC_UPDATE_REASON
from .dynamic_config import PRECONDITION_FAILED as PRECONDITION_FAILED
from .dynamic_config import DynamicConfigError as DynamicConfigError
from .dynamic_config import check_dynamic_delete as check_dynamic_delete
from .dynamic_config import check_dynamic_update as check_dynamic_update
from .dynamic_config import dynamic_configuration_names as dynamic_configuration_names
from .dynamic_config import is_dynamic_configuration as is_dynamic_configuration
from .dynamic_config import runtime_configuration as runtime_configuration
from .dynamic_config import validate_dynamic_configuration as validate_dynamic_configuration
from .errors import ConfigError as ConfigError
from .properties import property_text as property_text
from .service_config import LOAD_MANAGER_CLASSES as LOAD_MANAGER_CLASSES
from .service_config import PROFILES as PROFILES
from .service_config import SETTINGS as SETTINGS
from .service_config import ServiceConfig as ServiceConfig
from .service_config import mistyped_keys as mistyped_keys
from .service_config import suggest_key as suggest_key

__all__ = [
    "ConfigError",
    "DYNAMIC_KEYS",
    "DynamicConfigError",
    "INVALID_VALUE_REASON",
    "LOAD_MANAGER_CLASSES",
    "NON_DYNAMIC_DELETE_REASON",
    "NON_DYNAMIC_UPDATE_REASON",
    "PRECONDITION_FAILED",
    "PROFILES",
    "SETTINGS",
    "ServiceConfig",
    "check_dynamic_delete",
    "check_dynamic_update",
    "dynamic_configuration_names",
    "is_dynamic_configuration",
    "mistyped_keys",
    "property_text",
    "runtime_configuration",
    "suggest_key",
    "validate_dynamic_configuration",
]
