package toolsearch

import "strings"

// related maps a word people use when they ask for a tool to the words
// tool descriptions use for the same thing: a query's word is searched
// together with these (at half weight, see expandBoost), so that "save
// this to disk" finds a tool that "writes a file". The table is general
// vocabulary of tool descriptions (files, the web, time, messages,
// memory, media, weather), not a list of tools; it is kept small because
// every entry also adds noise for queries that use the word otherwise.
var related = map[string][]string{
	"save":        {"write", "store"},
	"store":       {"save", "write"},
	"download":    {"fetch", "url"},
	"webpage":     {"fetch", "url", "page"},
	"website":     {"fetch", "url", "web"},
	"browse":      {"browser", "navigate"},
	"remember":    {"memory", "knowledge", "observations", "entities"},
	"recall":      {"memory", "knowledge", "search"},
	"forget":      {"delete", "remove"},
	"remove":      {"delete"},
	"erase":       {"delete"},
	"rename":      {"move"},
	"modified":    {"modification", "time", "metadata"},
	"big":         {"size"},
	"large":       {"size"},
	"size":        {"metadata"},
	"picture":     {"image"},
	"photo":       {"image"},
	"draw":        {"generate", "image"},
	"screenshot":  {"screenshot", "capture"},
	"rain":        {"weather", "forecast"},
	"snow":        {"weather", "forecast"},
	"sunny":       {"weather", "forecast"},
	"tomorrow":    {"forecast"},
	"storm":       {"weather", "alerts"},
	"warning":     {"alerts"},
	"temperature": {"weather", "forecast"},
	"meeting":     {"time", "timezone"},
	"clock":       {"time"},
	"timezone":    {"time"},
	"o'clock":     {"time"},
	"bug":         {"issue"},
	"ticket":      {"issue"},
	"pr":          {"pull", "request"},
	"mr":          {"merge", "request"},
	"chat":        {"message", "channel"},
	"dm":          {"message"},
	"crash":       {"error", "issue"},
	"sql":         {"query", "database"},
	"db":          {"database"},
	"folder":      {"directory"},
	"directory":   {"folder"},
	"tally":       {"count"},
}

// expandBoost is the weight of a related word relative to the query's own.
const expandBoost = 0.5

// expansion returns the related words of text's words (see related),
// without the words text already has; "" when there are none.
func expansion(text string) string {
	have := map[string]bool{}
	fields := strings.Fields(strings.ToLower(text))
	for i, w := range fields {
		fields[i] = strings.Trim(w, ".,;:!?\"'()[]")
		have[fields[i]] = true
	}
	var out []string
	for _, w := range fields {
		for _, r := range related[w] {
			if !have[r] {
				have[r] = true
				out = append(out, r)
			}
		}
	}
	return strings.Join(out, " ")
}
