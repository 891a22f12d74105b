"""Pulsar's load managers, one package each, behind the seam in `emulator.cluster.load_manager`.

- `modular/`: ModularLoadManagerImpl (the default). `actors/`: the broker side (`modular_wrapper`), the
  leader actor (`leader`) and the leader's core (`modular_load_manager`). Its pure model is the shared
  `emulator.model` (load data, filters, split detection) with `strategies/` and `shedders/`.
- `simple/`: SimpleLoadManagerImpl (the fallback). `model/`: LoadReport, quotas, ranking, placement,
  shedding, split; `actors/`: the broker side and its watches and timers.
- `noop/`: NoopLoadManager. `actors/`: registration and reports, no decisions.
- `extensible/`: ExtensibleLoadManagerImpl (PIP-192). `model/`: the service-unit state channel's rules,
  load data, filters, split strategy; `actors/`: system topics, the channel, reporters, schedulers and
  the wrapper.

Each package's `model/` is pure (it imports only `emulator.model`); its `actors/` sit above
`emulator.cluster` (they import the broker's services, never the other way round). No manager imports
another (import-linter's contracts in pyproject.toml). The broker loads a manager by class name
(`emulator.cluster.load_manager.LOAD_MANAGERS`), so nothing below this package names one.

The seam each manager answers is one base class, `emulator.cluster.load_manager.LoadManager` (an
`abc.ABC`: what every manager answers its own way is abstract, Pulsar's defaults are written once), plus
the named capabilities it declares by subclassing them (`emulator.cluster.load_manager_capabilities`),
which the broker resolves once per manager into `broker.capabilities`:

| manager | class | capabilities |
|---|---|---|
| Modular | `ModularLoadManagerWrapper` | `ReportTicks`, `LeaderLoadView` |
| Simple | `SimpleLoadManagerImpl` | `LoadBalancingMetrics` |
| Noop | `NoopLoadManager` | `ReportTicks` |
| Extensible | `ExtensibleLoadManagerWrapper` | `ChannelOwnership`, `ExtensibleMetrics` |

To add one: a package here (`actors/`, and `model/` for pure logic) whose class subclasses `LoadManager`
and the capabilities it has; its Pulsar class name in `LOAD_MANAGERS` and in
`emulator.model.config.LOAD_MANAGER_CLASSES`; its packages in pyproject.toml's layers contract with a
forbidden contract of its own (and the README's layout table); a `Spec` in
tests/loadmanagers/test_conformance.py, which then runs the shared behaviours against it. No module
here is over 600 lines (tests/test_module_size.py).
"""
