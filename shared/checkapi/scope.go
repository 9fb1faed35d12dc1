package checkapi

// Scope is the one OAuth scope of the gateway's authorization server: access to the MCP
// servers a token is bound to, as far as the route's policy allows. The filter names it in
// the 401 challenge of an MCP server route (scope="mcp", as the MCP authorization
// specification asks of resource servers), the token service advertises it in the protected
// resource metadata and grants it with every token (docs/clients.md "Scopes").
const Scope = "mcp"
