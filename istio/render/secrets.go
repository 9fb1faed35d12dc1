package render

import (
	"bytes"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mcpmesh/gateway/shared/config"
)

// Where the token service container finds its files.
const (
	configDir  = "/etc/mcp-gateway"
	configFile = "gateway.yaml"
	secretDir  = "/etc/mcp-gateway/secrets"
	dataDir    = "/var/lib/mcp-gateway"
)

// secretKey is one key of the token service's Secret: handed to the container as the
// environment variable Env (an override the configuration documents), or else mounted as a
// file under secretDir that the ConfigMap's configuration names.
type secretKey struct {
	Key  string
	Env  string
	What string
}

// secretKeys lists the Secret keys cfg needs, in a fixed order.
func secretKeys(cfg *config.Config) []secretKey {
	keys := []secretKey{
		{Key: "shared-secret", Env: "SHARED_SECRET", What: "`shared_secret`: base64 of 32 random bytes; seals stored tokens and derives the filter key"},
		{Key: "cookie-secret", Env: "COOKIE_SECRET", What: "`cookie_secret`: base64 of 32 random bytes"},
	}
	if cfg.IDPClientSecretResolved != "" {
		keys = append(keys, secretKey{Key: "idp-client-secret", Env: "IDP_CLIENT_SECRET", What: "`idp_client_secret`: the client secret at your identity provider"})
	}
	for i, r := range cfg.Routes {
		if r.MCP != nil && r.MCP.Server != nil && r.MCP.Server.UpstreamOAuth2 != nil && r.MCP.Server.UpstreamOAuth2.ClientSecret != "" {
			keys = append(keys, secretKey{Key: upstreamSecretKey(i), What: fmt.Sprintf("`routes[%d].mcp.server.upstream_oauth2.client_secret` (%s): the client secret at the upstream provider", i, r.From)})
		}
		if r.MCP != nil && r.MCP.Server != nil && r.MCP.Server.UpstreamDiscovery != nil && r.MCP.Server.UpstreamDiscovery.ClientSecret != "" {
			keys = append(keys, secretKey{Key: upstreamSecretKey(i), What: fmt.Sprintf("`routes[%d].mcp.server.upstream_discovery.client_secret` (%s): the secret of the client registered at the discovered authorization server", i, r.From)})
		}
	}
	if cfg.Storage.Type == "postgres" && dsnHasPassword(cfg.Storage.DSN) {
		keys = append(keys, secretKey{Key: "storage-password", Env: "PGPASSWORD", What: "the password of `storage.dsn` (the rendered DSN has none; PostgreSQL's client reads PGPASSWORD)"})
	}
	return keys
}

func upstreamSecretKey(i int) string { return "upstream-" + strconv.Itoa(i) + "-client-secret" }

// secretLike matches keys that hold secrets; a configuration key of this form that the
// renderer does not know how to move into the Secret stops rendering (fail closed: a secret
// must never land in the ConfigMap).
var secretLike = regexp.MustCompile(`(?i)secret|password|private_key|credential`)

// configMapData is the configuration file for the ConfigMap: raw without secrets (they come
// from the Secret: environment overrides or client_secret_file), with the SQLite database in
// the pod's data volume and the PostgreSQL password left to PGPASSWORD. The operator's
// comments and key order are kept.
func configMapData(cfg *config.Config, raw []byte, keys []secretKey) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil || len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return nil, &Error{Key: "config", Msg: "the configuration file must be a YAML mapping"}
	}
	doc := root.Content[0]
	for _, k := range []string{"shared_secret", "cookie_secret", "idp_client_secret", "idp_client_secret_file"} {
		deleteKey(doc, k)
	}
	carryEnvironment(cfg, doc)
	if st := mapValue(doc, "storage"); st != nil {
		switch cfg.Storage.Type {
		case "sqlite":
			setScalar(st, "path", dataDir+"/"+path.Base(cfg.Storage.Path))
		case "postgres":
			if v := mapValue(st, "dsn"); v != nil {
				if strings.HasPrefix(v.Value, "postgres") && strings.Contains(v.Value, "://") {
					if _, err := url.Parse(v.Value); err != nil {
						return nil, &Error{Key: "storage.dsn", Msg: "not a valid URL, so its password could not be kept out of the ConfigMap"}
					}
				}
				v.Value = stripDSNPassword(v.Value)
			}
		}
	} else if cfg.Storage.Type == "sqlite" {
		st := &yaml.Node{Kind: yaml.MappingNode}
		setScalar(st, "type", "sqlite")
		setScalar(st, "path", dataDir+"/"+config.DefaultSQLitePath)
		doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "storage"}, st)
	}
	if routes := mapValue(doc, "routes"); routes != nil && routes.Kind == yaml.SequenceNode {
		for i, rn := range routes.Content {
			server := mapValue(mapValue(rn, "mcp"), "server")
			up := mapValue(server, "upstream_oauth2")
			if up == nil {
				up = mapValue(server, "upstream_discovery")
			}
			if up == nil {
				continue
			}
			deleteKey(up, "client_secret")
			deleteKey(up, "client_secret_file")
			for _, k := range keys {
				if k.Key == upstreamSecretKey(i) {
					setScalar(up, "client_secret_file", secretDir+"/"+k.Key)
				}
			}
		}
	}
	if err := findSecrets(doc, ""); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return nil, &Error{Key: "config", Msg: err.Error()}
	}
	_ = enc.Close()
	return b.Bytes(), nil
}

// carryEnvironment writes into doc the settings the environment may have given when
// rendering (AUTHENTICATE_SERVICE_URL, IDP_PROVIDER, IDP_PROVIDER_URL, IDP_CLIENT_ID,
// IDP_SCOPES, IDP_REQUEST_PARAMS), so that the token service in the pod runs with the
// configuration the plugin configuration was rendered from.
func carryEnvironment(cfg *config.Config, doc *yaml.Node) {
	for _, kv := range []struct{ key, value string }{
		{"authenticate_service_url", cfg.AuthenticateServiceURL},
		{"idp_provider", cfg.IDPProvider},
		{"idp_provider_url", cfg.IDPProviderURL},
		{"idp_client_id", cfg.IDPClientID},
	} {
		if v := mapValue(doc, kv.key); kv.value != "" && (v == nil || v.Value != kv.value) {
			setScalar(doc, kv.key, kv.value)
		}
	}
	if len(cfg.IDPScopes) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, sc := range cfg.IDPScopes {
			seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: sc})
		}
		setNode(doc, "idp_scopes", seq)
	}
	if cfg.IDPRequestParams != nil {
		m := &yaml.Node{Kind: yaml.MappingNode}
		keys := make([]string, 0, len(cfg.IDPRequestParams))
		for k := range cfg.IDPRequestParams {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, &yaml.Node{Kind: yaml.ScalarNode, Value: cfg.IDPRequestParams[k], Style: yaml.DoubleQuotedStyle})
		}
		setNode(doc, "idp_request_params", m)
	}
}

// setNode replaces (keeping its comments) or appends the value of key.
func setNode(n *yaml.Node, key string, value *yaml.Node) {
	if v := mapValue(n, key); v != nil {
		value.HeadComment, value.LineComment, value.FootComment = v.HeadComment, v.LineComment, v.FootComment
		*v = *value
		return
	}
	n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, value)
}

// findSecrets reports a secret-like key with a value left in n.
func findSecrets(n *yaml.Node, p string) error {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			kp := k
			if p != "" {
				kp = p + "." + k
			}
			if secretLike.MatchString(k) && v.Kind == yaml.ScalarNode && v.Value != "" && !strings.HasSuffix(k, "_file") {
				return &Error{Key: kp, Msg: "holds a secret the renderer cannot move into the token service's Secret; it would be written into the ConfigMap"}
			}
			if p == "" && k == "routes" {
				for j, rn := range v.Content {
					if err := findSecrets(rn, "routes["+strconv.Itoa(j)+"]"); err != nil {
						return err
					}
				}
				continue
			}
			if strings.HasSuffix(p, "]") && k == "policy" {
				continue // the policy language: its keys are criteria, not settings
			}
			if err := findSecrets(v, kp); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for j, e := range n.Content {
			if err := findSecrets(e, p+"["+strconv.Itoa(j)+"]"); err != nil {
				return err
			}
		}
	}
	return nil
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func deleteKey(n *yaml.Node, key string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			n.Content = append(n.Content[:i], n.Content[i+2:]...)
			return
		}
	}
}

func setScalar(n *yaml.Node, key, value string) {
	if v := mapValue(n, key); v != nil {
		*v = yaml.Node{Kind: yaml.ScalarNode, Value: value, LineComment: v.LineComment}
		return
	}
	n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &yaml.Node{Kind: yaml.ScalarNode, Value: value})
}

var kvPassword = regexp.MustCompile(`(^|\s)password\s*=\s*('(\\.|[^'\\])*'|\S*)`)

func dsnHasPassword(dsn string) bool { return stripDSNPassword(dsn) != dsn }

// stripDSNPassword removes the password of a PostgreSQL connection string (URL or key=value
// form).
func stripDSNPassword(dsn string) string {
	dsn = strings.TrimSpace(dsn)
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return dsn
		}
		changed := false
		if _, ok := u.User.Password(); ok {
			u.User = url.User(u.User.Username())
			changed = true
		}
		q := u.Query()
		if q.Has("password") {
			q.Del("password")
			u.RawQuery = q.Encode()
			changed = true
		}
		if !changed {
			// Re-serialising could change a URL that holds nothing to strip ("postgres://"
			// becomes "postgres:"); leave it exactly as written.
			return dsn
		}
		return u.String()
	}
	return strings.TrimSpace(kvPassword.ReplaceAllString(dsn, "$1"))
}

// secretsDoc is SECRETS.md: the Secret to create, its keys, and no values.
func (r *renderer) secretsDoc() []byte {
	var b strings.Builder
	ts := r.ts
	fmt.Fprintf(&b, "# Secrets to create before applying\n\n")
	fmt.Fprintf(&b, "The token service reads its secrets from the Secret `%s` in namespace `%s`; no rendered\n", ts.Name, ts.Namespace)
	fmt.Fprintf(&b, "file holds a secret value. Create it with these keys, each from a file without a trailing\n")
	fmt.Fprintf(&b, "newline (`head -c32 /dev/urandom | base64 | tr -d '\\n' > shared-secret`, `printf %%s \"$VALUE\" > KEY`):\n\n")
	fmt.Fprintf(&b, "| key | handed to the token service as | what |\n|---|---|---|\n")
	for _, k := range r.secrets {
		how := "file `" + secretDir + "/" + k.Key + "`"
		if k.Env != "" {
			how = "environment `" + k.Env + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", k.Key, how, k.What)
	}
	fmt.Fprintf(&b, "\n```sh\nkubectl create namespace %s --dry-run=client -o yaml | kubectl apply -f -\n", ts.Namespace)
	fmt.Fprintf(&b, "kubectl -n %s create secret generic %s \\\n", ts.Namespace, ts.Name)
	for i, k := range r.secrets {
		end := " \\"
		if i == len(r.secrets)-1 {
			end = ""
		}
		fmt.Fprintf(&b, "  --from-file=%s=./%s%s\n", k.Key, k.Key, end)
	}
	fmt.Fprintf(&b, "```\n\n")
	fmt.Fprintf(&b, "`%s` holds the filter key (`filter_key`, derived one-way from `shared_secret`): it opens\n", FileWasmPlugin)
	fmt.Fprintf(&b, "only the check API on port %d, which `%s` keeps to the filter's proxies. Treat the file\n", ts.InternalPort, FileAuthz)
	fmt.Fprintf(&b, "as confidential all the same, and render again after rotating `shared_secret`.\n")
	return []byte(b.String())
}
