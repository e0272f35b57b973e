package mcpapi

// Sync runs one sync of s's tools with its host and returns how many
// tools it added, replaced or removed.
func Sync(s *Server) int { return s.sync() }

// Changes returns how many tools s has added, replaced or removed since
// New.
func Changes(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changes
}

// FastCalls is how many session calls h answered itself (fastcall.go).
func FastCalls(h *HTTPHandler) int64 { return h.fast.taken.Load() }

// FastPath reports whether h can answer session calls itself (the SDK
// has patch 0011's HoldSession and 0014's HandleCallTool).
func FastPath(h *HTTPHandler) bool { return h.fast.holder != nil }
