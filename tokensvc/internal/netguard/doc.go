// Package netguard owns the token service's guard for fetching URLs that someone other than
// the operator chose: client ID metadata documents and their jwks_uri (package oauth), and an
// upstream MCP server's protected-resource and authorization server metadata (package
// upstream, docs/upstream-discovery.md).
//
//   - [NewClient] builds the one HTTP client such fetches use: it dials only addresses its
//     AllowAddr accepts ([PublicAddr] by default, checked after name resolution for every
//     address dialled), ignores proxy settings, follows no redirect ([ErrRedirect]) and is
//     bounded in time.
//
// Which hosts may be fetched at all is the operator's allowlist, matched by shared/domains.
package netguard
