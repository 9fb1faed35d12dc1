package host

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// ABIVersion is the proxy-wasm ABI a module declares with its marker export.
type ABIVersion string

// ABI versions the host runs.
const (
	ABI020 ABIVersion = "0.2.0"
	ABI021 ABIVersion = "0.2.1"
)

// CompileOptions tunes Compile. The zero value uses wazero's compiler (where supported) and
// no compilation cache.
type CompileOptions struct {
	// Cache shares compiled code across runtimes, for example across tests of one binary
	// (wazero.NewCompilationCache) or across processes (wazero.NewCompilationCacheWithDir).
	Cache wazero.CompilationCache
	// Interpreter selects wazero's interpreter instead of its compiler: slower calls, much
	// faster compilation.
	Interpreter bool
}

// Module is a compiled proxy-wasm module. It is safe for concurrent use; any number of Hosts
// can be created from it, each instantiating its own VMs (compilation is done once).
type Module struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	table    *funcTable
	abi      ABIVersion
	size     int
	imports  []int // indexes into table.funcs of the functions the module imports
	exports  map[string]bool

	mu     sync.Mutex
	closed bool
}

// abiMarkers maps marker exports to versions, as cpp-host's BytecodeUtil::getAbiVersion.
var abiMarkers = map[string]ABIVersion{
	"proxy_abi_version_0_2_1": ABI021,
	"proxy_abi_version_0_2_0": ABI020,
}

// Compile validates and compiles a proxy-wasm module. It fails with ErrBadModule, naming the
// problem, where Envoy would refuse the module: no supported ABI marker export, an import the
// host does not provide or with another signature, no allocator export.
func Compile(ctx context.Context, wasm []byte, opts *CompileOptions) (*Module, error) {
	if opts == nil {
		opts = &CompileOptions{}
	}
	cfg := wazero.NewRuntimeConfig()
	if opts.Interpreter {
		cfg = wazero.NewRuntimeConfigInterpreter()
	}
	cfg = cfg.WithMemoryLimitPages(maxMemoryPages).WithCloseOnContextDone(false)
	if opts.Cache != nil {
		cfg = cfg.WithCompilationCache(opts.Cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	m := &Module{rt: rt, table: newFuncTable(), size: len(wasm)}
	if err := m.table.instantiateHostModules(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, err
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("compile module: %w: %w", ErrBadModule, err)
	}
	m.compiled = compiled
	if err := m.inspect(); err != nil {
		rt.Close(ctx)
		return nil, err
	}
	return m, nil
}

// inspect checks the marker, the exports the host needs and every import.
func (m *Module) inspect() error {
	m.exports = map[string]bool{}
	for name := range m.compiled.ExportedFunctions() {
		m.exports[name] = true
	}
	for marker, v := range abiMarkers {
		if m.exports[marker] && (m.abi == "" || v > m.abi) {
			m.abi = v
		}
	}
	if m.abi == "" {
		if m.exports["proxy_abi_version_0_1_0"] {
			return fmt.Errorf("%w: ABI 0.1.0 is not emulated (export proxy_abi_version_0_2_1)", ErrBadModule)
		}
		return fmt.Errorf("%w: missing or unknown Proxy-Wasm ABI version (no proxy_abi_version_0_2_1 export)", ErrBadModule)
	}
	if !m.exports["malloc"] && !m.exports["proxy_on_memory_allocate"] {
		return fmt.Errorf("%w: Wasm module is missing malloc function (export proxy_on_memory_allocate)", ErrBadModule)
	}
	if len(m.compiled.ExportedMemories()) == 0 {
		return fmt.Errorf("%w: module exports no memory", ErrBadModule)
	}
	var problems []string
	for _, def := range m.compiled.ImportedFunctions() {
		mod, name, _ := def.Import()
		i, ok := m.table.byKey[mod+"."+name]
		if !ok {
			problems = append(problems, "Failed to load Wasm module due to a missing import: "+mod+"."+name)
			continue
		}
		f := &m.table.funcs[i]
		if f.abi021 && m.abi != ABI021 {
			problems = append(problems, "Failed to load Wasm module due to a missing import: "+mod+"."+name+
				" (only linked for ABI 0.2.1, module declares "+string(m.abi)+")")
			continue
		}
		if !sameTypes(def.ParamTypes(), f.params) || !sameTypes(def.ResultTypes(), f.results) {
			problems = append(problems, "Failed to load Wasm module due to an import type mismatch: "+
				mod+"."+name+", want: "+sig(def.ParamTypes(), def.ResultTypes())+", but host exports: "+sig(f.params, f.results))
			continue
		}
		m.imports = append(m.imports, i)
	}
	for _, def := range m.compiled.ImportedMemories() {
		mod, name, _ := def.Import()
		problems = append(problems, "Failed to load Wasm module due to a missing import: "+mod+"."+name+" (memory imports are not supported)")
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%w: %s", ErrBadModule, strings.Join(problems, "; "))
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ABI returns the ABI version the module declares.
func (m *Module) ABI() ABIVersion { return m.abi }

// Size returns the size of the module's bytecode in bytes.
func (m *Module) Size() int { return m.size }

// Imports returns the host functions the module imports, as "module.name", sorted.
func (m *Module) Imports() []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(m.imports))
	for _, i := range m.imports {
		if k := m.table.funcs[i].key(); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Exports reports whether the module exports a function called name.
func (m *Module) Exports(name string) bool { return m.exports[name] }

// checkCompat reports imports that cpp-host in compatibility mode c does not provide.
func (m *Module) checkCompat(c Compat) error {
	if c != CompatLegacy {
		return nil
	}
	var missing []string
	for _, i := range m.imports {
		f := &m.table.funcs[i]
		if f.module != modEnv && !f.legacy {
			missing = append(missing, "Failed to load Wasm module due to a missing import: "+f.key())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: with CompatLegacy (cpp-host before #533): %s", ErrBadModule, strings.Join(missing, "; "))
	}
	return nil
}

// instantiate creates a fresh, not yet initialized instance of the module.
func (m *Module) instantiate(ctx context.Context) (api.Module, error) {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, errors.New("instantiate module: module closed")
	}
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions()
	mod, err := m.rt.InstantiateModule(ctx, m.compiled, cfg)
	if err != nil {
		return nil, fmt.Errorf("instantiate module: %w", err)
	}
	return mod, nil
}

// Close releases the compiled code and every VM still instantiated from the module.
func (m *Module) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	return m.rt.Close(ctx)
}
