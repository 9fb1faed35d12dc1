// Package config is the gateway configuration: one YAML file shared by the token service, the
// local gateway and the manifest renderer (DESIGN.md §3). Load parses it strictly (an unknown
// key, a wrong type or a contradiction is an error naming the key path), applies the
// environment overrides of SPEC.md (IDP_* variables), fills defaults and validates it.
// PluginConfig derives the JSON subset the filter receives.
package config
