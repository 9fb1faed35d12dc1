package plugintest

// Abandon ends the held request's stream before its check call is answered (the client went
// away), as the proxy does: the stream's OnDone runs, and the call's answer never reaches the
// filter (the ABI drops answers of ended streams).
func (h *Held) Abandon() { h.st.OnDone() }
