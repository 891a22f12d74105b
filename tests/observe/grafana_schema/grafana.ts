// The types the shipped Grafana files are checked against (tests/observe/test_grafana_files.py writes
// check.ts: one typed constant per file, then `tsc --noEmit --strict`).
//
// Dashboards: Grafana's published schema, the @grafana/schema package (the dashboard, panel, variable and
// annotation types; the time-series panel's options and field config). Object literals get TypeScript's
// excess-property check, so a misspelt or unknown key fails as a wrong value does.
//
// Not in @grafana/schema, so written here from Grafana's source, and marked as such:
// * the Prometheus query and annotation fields (packages/grafana-prometheus: dataquery.ts `Prometheus`,
//   annotations.ts `PrometheusAnnotationSupport`);
// * the provisioning files (pkg/services/provisioning/datasources/types.go `configsV1`,
//   pkg/services/provisioning/dashboards/types.go `DashboardProviderConfigs`), and the Prometheus
//   datasource's jsonData keys used here (PromOptions).

import type {
  AnnotationQuery,
  Dashboard,
  DataQuery,
  Panel,
} from '@grafana/schema';
import type {
  FieldConfig as TimeSeriesFieldConfig,
  Options as TimeSeriesOptions,
} from '@grafana/schema/dist/esm/raw/composable/timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen';

// JSON has no enums: a string enum member is its string value (`${E}`); numeric enums take their
// numbers as they are (TypeScript still rejects a number that is no member).
export type Json<T> =
  T extends string ? `${T}` :
  T extends number | boolean | null | undefined ? T :
  T extends ReadonlyArray<infer U> ? Array<Json<U>> :
  T extends object ? { [K in keyof T]: Json<T[K]> } :
  T;

// packages/grafana-prometheus/src/dataquery.ts `Prometheus` (and PromQuery's `interval`).
export interface PromQuery extends DataQuery {
  expr: string;
  legendFormat?: string;
  format?: 'time_series' | 'table' | 'heatmap';
  instant?: boolean;
  range?: boolean;
  exemplar?: boolean;
  editorMode?: 'code' | 'builder';
  interval?: string;
}

// packages/grafana-prometheus/src/annotations.ts: the fields PrometheusAnnotationSupport reads.
export interface PromAnnotationFields {
  titleFormat?: string;
  textFormat?: string;
  tagKeys?: string;
  useValueForTime?: boolean;
}

// The veneer's Panel<Options, FieldConfig> types the field config only: `options` is set here.
export type TimeSeriesPanel = Json<
  Omit<Panel<TimeSeriesOptions, TimeSeriesFieldConfig>, 'targets' | 'options'> & {
    type: 'timeseries';
    options: TimeSeriesOptions;
    targets: PromQuery[];
  }
>;

export type PulsarDashboard = Json<
  Omit<Dashboard, 'annotations' | 'panels'> & {
    annotations: { list: Array<AnnotationQuery<PromQuery> & PromAnnotationFields> };
    panels: Array<Omit<Panel, 'targets'> & { targets: PromQuery[] }>;
  }
>;

// pkg/services/provisioning/datasources/types.go: configsV1 and upsertDataSourceFromConfigV1.
export interface DatasourcesFileV1 {
  apiVersion: 1;
  datasources?: Array<{
    orgId?: number;
    orgName?: string;
    version?: number;
    name: string;
    type: string;
    access?: 'proxy' | 'direct';
    url?: string;
    user?: string;
    database?: string;
    basicAuth?: boolean;
    basicAuthUser?: string;
    withCredentials?: boolean;
    isDefault?: boolean;
    correlations?: Array<Record<string, unknown>>;
    jsonData?: PromJsonData;
    secureJsonData?: Record<string, string>;
    editable?: boolean;
    uid?: string;
  }>;
  deleteDatasources?: Array<{ orgId?: number; orgName?: string; name: string }>;
}

// packages/grafana-prometheus/src/types.ts PromOptions: the keys this project sets.
export interface PromJsonData {
  timeInterval?: string;
  queryTimeout?: string;
  httpMethod?: 'GET' | 'POST';
}

// pkg/services/provisioning/dashboards/types.go: DashboardAsConfigV1 and DashboardProviderConfigs.
export interface DashboardProvidersFileV1 {
  apiVersion: 1;
  providers: Array<{
    name: string;
    type: 'file';
    orgId?: number;
    folder?: string;
    folderUid?: string;
    editable?: boolean;
    disableDeletion?: boolean;
    updateIntervalSeconds?: number;
    allowUiUpdates?: boolean;
    options: { path: string; foldersFromFilesStructure?: boolean };
  }>;
}
