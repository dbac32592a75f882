// Package config holds Knative Serving's ConfigMaps as typed values: config-domain,
// config-network, config-defaults, config-gc, config-deployment, config-features,
// config-autoscaler, config-certmanager and config-observability, read from Ferry's system namespace with Knative's names, keys,
// defaults and parse rules, so that a Knative user's configuration carries over
// unchanged.
//
// A Store watches the ConfigMaps and hands out an immutable *Config snapshot. A bad
// value is reported (a Warning Event on the ConfigMap and a log line) and the last good
// value of that ConfigMap stays in force, as in Knative after start-up.
package config
