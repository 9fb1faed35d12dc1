package host

// A tiny WebAssembly binary writer for tests that need hand-made modules (bad markers,
// unknown imports, signature mismatches).

type wasmFunc struct {
	params, results []byte // value types: 0x7f i32, 0x7e i64
}

type wasmImport struct {
	module, name string
	typ          wasmFunc
}

type wasmExport struct {
	name string
	typ  wasmFunc
}

func uleb(n uint32) []byte {
	var b []byte
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func wname(s string) []byte { return append(uleb(uint32(len(s))), s...) }

func section(id byte, body []byte) []byte {
	return append(append([]byte{id}, uleb(uint32(len(body)))...), body...)
}

func vec(items [][]byte) []byte {
	b := uleb(uint32(len(items)))
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

// buildModule writes a module with one memory (exported as "memory"), the given imports and
// exported functions whose bodies return zero values.
func buildModule(imports []wasmImport, exports []wasmExport) []byte {
	var types, imps, funcs, exps, codes [][]byte
	typeIdx := func(f wasmFunc) []byte {
		t := append([]byte{0x60}, uleb(uint32(len(f.params)))...)
		t = append(t, f.params...)
		t = append(t, uleb(uint32(len(f.results)))...)
		t = append(t, f.results...)
		types = append(types, t)
		return uleb(uint32(len(types) - 1))
	}
	for _, im := range imports {
		e := append(wname(im.module), wname(im.name)...)
		e = append(e, 0x00)
		imps = append(imps, append(e, typeIdx(im.typ)...))
	}
	for i, ex := range exports {
		funcs = append(funcs, typeIdx(ex.typ))
		e := append(wname(ex.name), 0x00)
		exps = append(exps, append(e, uleb(uint32(len(imports)+i))...))
		var body []byte
		for _, r := range ex.typ.results {
			if r == 0x7e {
				body = append(body, 0x42, 0x00)
			} else {
				body = append(body, 0x41, 0x00)
			}
		}
		body = append([]byte{0x00}, append(body, 0x0b)...) // no locals
		codes = append(codes, append(uleb(uint32(len(body))), body...))
	}
	exps = append(exps, append(wname("memory"), 0x02, 0x00))
	m := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	m = append(m, section(1, vec(types))...)
	if len(imps) > 0 {
		m = append(m, section(2, vec(imps))...)
	}
	m = append(m, section(3, vec(funcs))...)
	m = append(m, section(5, vec([][]byte{{0x00, 0x01}}))...)
	m = append(m, section(7, vec(exps))...)
	m = append(m, section(10, vec(codes))...)
	return m
}

var (
	voidFn  = wasmFunc{}
	allocFn = wasmFunc{params: []byte{0x7f}, results: []byte{0x7f}}
)

func minimalExports(marker string) []wasmExport {
	return []wasmExport{{name: marker, typ: voidFn}, {name: "proxy_on_memory_allocate", typ: allocFn}}
}
