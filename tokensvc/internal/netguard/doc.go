// Package netguard owns the token service's guard for fetching URLs that someone other than
// the operator chose: client ID metadata documents and their jwks_uri (package oauth), and an
// upstream MCP server's protected-resource and authorization server metadata (package
// upstream, docs/upstream-discovery.md).
//
//   - [NewClient] builds the one HTTP client such fetches use: it dials only addresses its
//     AllowAddr accepts ([PublicAddr] by default, checked after name resolution for every
//     address dialled), ignores proxy settings, follows no redirect ([ErrRedirect]) and is
//     bounded in time.
//   - [DomainAllowed] is the one matcher of the operator's domain allowlists
//     (mcp_allowed_client_id_domains, mcp_allowed_upstream_domains): exact names, or "*."
//     for proper subdomains at any depth; IP literals never match.
package netguard
