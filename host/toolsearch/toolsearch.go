// Package toolsearch ranks the tools of a catalog by relevance to a
// query, for catalogs too large to send whole to a model (the
// search_tools meta-tool of --tool-search).
//
// Ranking is BM25 (bleve's in-memory index with its "bm25" scoring model)
// over three fields of each tool, each analysed as English (lower case,
// stop words, Porter stemming):
//   - name: the tool name split into words ("git_diff_unstaged" →
//     "git diff unstaged", "sequentiallyRead" → "sequentially read",
//     "gitlab__create_issue" → "gitlab create issue"), boosted 2×;
//   - description;
//   - parameters: the names (split the same way) and descriptions of the
//     input schema's top-level properties, boosted 0.5×;
//   - plugin: the name of the plugin that serves the tool ("memory",
//     "weather"), split the same way.
//
// A query's words are also searched with related words at half weight
// (expand.go: "save" finds "write", "picture" finds "image").
//
// An Index is immutable: build a new one when the catalog changes.
package toolsearch

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// DefaultLimit is the number of hits Search returns when asked for 0.
const DefaultLimit = 5

// MaxLimit is the most hits Search returns, whatever it is asked for.
const MaxLimit = 50

// MaxQueryBytes is the longest query Search accepts, in bytes.
const MaxQueryBytes = 1024

// Field boosts: a word of the name counts twice a word of the
// description, a parameter's half.
const (
	nameBoost   = 2.0
	paramsBoost = 0.5
)

// Tool is one tool of the catalog as a model would be shown it.
type Tool struct {
	// Name is the tool's name as served (unique in the catalog).
	Name string `json:"name"`
	// Plugin is the name of the plugin (or MCP server) serving it; may
	// be "".
	Plugin string `json:"plugin,omitempty"`
	// Description is the tool's description.
	Description string `json:"description"`
	// InputSchema is the tool's JSON Schema for its arguments (an object
	// schema); its top-level property names and descriptions are indexed.
	// May be nil.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// OutputSchema is the JSON Schema of the tool's result object, or
	// nil; it is not indexed.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

// Hit is one ranked tool.
type Hit struct {
	// Tool is the matching tool.
	Tool Tool
	// Score is its BM25 score for the query (higher is more relevant;
	// comparable only within one Search).
	Score float64
}

// Index is a searchable catalog. It is safe for concurrent use.
type Index struct {
	idx   bleve.Index
	tools map[string]Tool
}

// doc is what is indexed of a Tool.
type doc struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Params      string `json:"params"`
	Plugin      string `json:"plugin"`
}

// New indexes tools. Errors: two tools with one name, or the index could
// not be built.
func New(tools []Tool) (*Index, error) {
	idx, err := bleve.NewMemOnly(indexMapping())
	if err != nil {
		return nil, fmt.Errorf("toolsearch: %w", err)
	}
	x := &Index{idx: idx, tools: make(map[string]Tool, len(tools))}
	batch := idx.NewBatch()
	for _, t := range tools {
		if _, dup := x.tools[t.Name]; dup {
			idx.Close()
			return nil, fmt.Errorf("toolsearch: tool %q given twice", t.Name)
		}
		x.tools[t.Name] = t
		if err := batch.Index(t.Name, doc{Name: words(t.Name), Description: t.Description, Params: params(t.InputSchema), Plugin: words(t.Plugin)}); err != nil {
			idx.Close()
			return nil, fmt.Errorf("toolsearch: index %q: %w", t.Name, err)
		}
	}
	if err := idx.Batch(batch); err != nil {
		idx.Close()
		return nil, fmt.Errorf("toolsearch: %w", err)
	}
	return x, nil
}

// indexMapping maps doc's three fields as English text, BM25-scored.
func indexMapping() *mapping.IndexMappingImpl {
	m := bleve.NewIndexMapping()
	m.ScoringModel = index.BM25Scoring
	m.DefaultAnalyzer = en.AnalyzerName
	dm := bleve.NewDocumentStaticMapping()
	for _, f := range []string{"name", "description", "params", "plugin"} {
		fm := bleve.NewTextFieldMapping()
		fm.Analyzer = en.AnalyzerName
		fm.Store = false
		fm.IncludeTermVectors = false
		dm.AddFieldMappingsAt(f, fm)
	}
	m.DefaultMapping = dm
	return m
}

// ErrEmptyQuery is returned by Search for a query with no words.
var ErrEmptyQuery = errors.New("toolsearch: the query is empty")

// Search returns up to limit tools (DefaultLimit for 0, at most MaxLimit)
// for which allowed reports true (nil: every tool), most relevant first;
// tools that share no word with the query are not returned. Errors:
// ErrEmptyQuery, a query over MaxQueryBytes, or the index failing.
func (x *Index) Search(q string, limit int, allowed func(name string) bool) ([]Hit, error) {
	q = strings.TrimSpace(q)
	switch {
	case q == "":
		return nil, ErrEmptyQuery
	case len(q) > MaxQueryBytes:
		return nil, fmt.Errorf("toolsearch: the query is %d bytes, more than %d", len(q), MaxQueryBytes)
	}
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	text := words(q)
	match := fieldsQuery(text, 1)
	if more := expansion(text); more != "" {
		match = bleve.NewDisjunctionQuery(match, fieldsQuery(more, expandBoost))
	}
	// Every tool can be ranked: the allowed filter comes after ranking,
	// so that a key's view never changes another key's scores.
	req := bleve.NewSearchRequestOptions(match, len(x.tools), 0, false)
	res, err := x.idx.Search(req)
	if err != nil {
		return nil, fmt.Errorf("toolsearch: %w", err)
	}
	var hits []Hit
	for _, h := range res.Hits {
		if allowed != nil && !allowed(h.ID) {
			continue
		}
		hits = append(hits, Hit{Tool: x.tools[h.ID], Score: h.Score})
		if len(hits) == limit {
			break
		}
	}
	return hits, nil
}

// fieldsQuery matches text against every field with its boost, times
// boost.
func fieldsQuery(text string, boost float64) query.Query {
	var fields []query.Query
	for _, f := range []struct {
		name  string
		boost float64
	}{{"name", nameBoost}, {"description", 1}, {"params", paramsBoost}, {"plugin", 1}} {
		mq := bleve.NewMatchQuery(text)
		mq.SetField(f.name)
		mq.SetBoost(f.boost * boost)
		fields = append(fields, mq)
	}
	return bleve.NewDisjunctionQuery(fields...)
}

// Len returns the number of tools in the index.
func (x *Index) Len() int { return len(x.tools) }

// Close releases the index.
func (x *Index) Close() error { return x.idx.Close() }

// words splits identifiers into words: "_", "-", "." and "/" separate,
// and so does a lower-to-upper case change ("sequentiallyRead"), so that
// a name matches the words of a query. Other text passes through.
func words(s string) string {
	var b strings.Builder
	var prev rune
	for _, r := range s {
		switch {
		case r == '_' || r == '-' || r == '.' || r == '/':
			r = ' '
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}

// params returns the words of schema's top-level property names and
// descriptions ("" when schema is not an object schema).
func params(schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return ""
	}
	var b strings.Builder
	for name, p := range s.Properties {
		b.WriteString(words(name))
		b.WriteByte(' ')
		b.WriteString(p.Description)
		b.WriteByte(' ')
	}
	return b.String()
}
