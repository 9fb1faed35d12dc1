// Package domains owns the one matcher of the operator's domain allowlists,
// mcp_allowed_client_id_domains and mcp_allowed_upstream_domains: exact names, or "*." for
// proper subdomains at any depth; IP literals never match. Configuration validation and the
// token service's guarded fetches (tokensvc/internal/netguard) both use it.
package domains
