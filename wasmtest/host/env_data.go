package host

// proxy_* host calls for shared data, metrics, properties and foreign functions.

// Shared data.

func hGetSharedData(v *vm, s []uint64) {
	key, ok := v.readString(uint32(s[0]), uint32(s[1]))
	if !ok {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	val, cas, found := v.host.shared.get(key)
	if !found {
		ret(s, StatusNotFound)
		return
	}
	if st := v.copyOut(val, uint32(s[2]), uint32(s[3])); st != StatusOK {
		ret(s, st)
		return
	}
	if !v.writeU32(uint32(s[4]), cas) {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	ret(s, StatusOK)
}

func hSetSharedData(v *vm, s []uint64) {
	key, ok1 := v.readString(uint32(s[0]), uint32(s[1]))
	val, ok2 := v.read(uint32(s[2]), uint32(s[3]))
	if !ok1 || !ok2 {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	ret(s, v.host.shared.set(key, val, uint32(s[4])))
}

// Metrics (Envoy Context::defineMetric and friends). Ids encode the type in their low bits.

func hDefineMetric(v *vm, s []uint64) {
	typ := uint32(s[0])
	if typ > metricHistogram {
		ret(s, StatusBadArgument)
		return
	}
	name, ok := v.readString(uint32(s[1]), uint32(s[2]))
	if !ok {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	v.nextMetricIDs[typ] += metricIDStep
	id := v.nextMetricIDs[typ]
	v.metricIDs[id] = v.host.metrics.get(MetricType(typ), name)
	if !v.writeU32(uint32(s[3]), id) {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	ret(s, StatusOK)
}

func hIncrementMetric(v *vm, s []uint64) {
	id, delta := uint32(s[0]), int64(s[1])
	m := v.metricIDs[id]
	switch id & metricTypeMask {
	case metricCounter:
		if m == nil {
			ret(s, StatusNotFound)
			return
		}
		if delta <= 0 {
			ret(s, StatusBadArgument)
			return
		}
	case metricGauge:
		if m == nil {
			ret(s, StatusNotFound)
			return
		}
	default:
		ret(s, StatusBadArgument)
		return
	}
	m.mu.Lock()
	m.val += delta
	m.mu.Unlock()
	ret(s, StatusOK)
}

func hRecordMetric(v *vm, s []uint64) {
	id, val := uint32(s[0]), int64(s[1])
	m := v.metricIDs[id]
	if m == nil {
		ret(s, StatusNotFound)
		return
	}
	m.mu.Lock()
	switch m.typ {
	case Counter:
		m.val += val
	case Gauge:
		m.val = val
	case Histogram:
		m.val = val
		m.cnt++
		m.sum += val
	}
	m.mu.Unlock()
	ret(s, StatusOK)
}

func hGetMetric(v *vm, s []uint64) {
	id := uint32(s[0])
	if id&metricTypeMask == metricHistogram || id&metricTypeMask == 3 {
		ret(s, StatusBadArgument)
		return
	}
	m := v.metricIDs[id]
	if m == nil {
		ret(s, StatusNotFound)
		return
	}
	m.mu.Lock()
	val := m.val
	m.mu.Unlock()
	if !v.writeU64(uint32(s[1]), uint64(val)) {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	ret(s, StatusOK)
}

// Properties.

func hGetProperty(v *vm, s []uint64) {
	path, ok := v.readCopy(uint32(s[0]), uint32(s[1]))
	if !ok {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	val, st := v.property(path)
	if st != StatusOK {
		ret(s, st)
		return
	}
	ret(s, v.copyOut(val, uint32(s[2]), uint32(s[3])))
}

func hSetProperty(v *vm, s []uint64) {
	// The path is only read (the map key below is its copy); the value is kept, so copied.
	path, ok1 := v.read(uint32(s[0]), uint32(s[1]))
	val, ok2 := v.readCopy(uint32(s[2]), uint32(s[3]))
	if !ok1 || !ok2 {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	st := v.activeStream()
	if st == nil {
		ret(s, StatusNotFound) // Envoy: no stream info on the root context
		return
	}
	if st.props == nil {
		st.props = make(map[string][]byte, 8) // the filter sets six on an MCP request
	}
	st.props[v.name(path)] = val
	ret(s, StatusOK)
}

// hCallForeignFunction: no foreign functions are registered, so every name is NOT_FOUND.
func hCallForeignFunction(v *vm, s []uint64) {
	if _, ok := v.read(uint32(s[0]), uint32(s[1])); !ok {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	if _, ok := v.read(uint32(s[2]), uint32(s[3])); !ok {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	ret(s, StatusNotFound)
}
