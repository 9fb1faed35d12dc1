// Package config is the gateway configuration (docs/configuration.md): one YAML file shared by
// the token service and the local gateway. Load parses it strictly (an unknown key, a wrong
// type or a contradiction is an error naming the key path), applies the environment overrides
// (IDP_* and the secrets' variables), fills defaults and validates it. The provider table
// (providers.go) says what each idp_provider needs.
// PluginConfig derives the JSON subset the filter receives.
package config
