package opentool

import "strconv"

// rootPath is the path of faults about the document as a whole (not JSON,
// not an object).
const rootPath = "$"

// joinField appends a fixed field name of the spec ("info", "$ref", ...) to
// the path base: "functions[0]" + "name" = "functions[0].name".
func joinField(base, field string) string {
	if base == "" {
		return field
	}
	return base + "." + field
}

// joinKey appends a user-chosen map key (a schema or property name) to base.
// Keys made only of ASCII letters, digits, '_' and '-' are dotted
// ("schemas.Id"); others are quoted ("schemas[\"a.b\"]", "schemas[\"\"]").
func joinKey(base, key string) string {
	if isSimpleKey(key) {
		return joinField(base, key)
	}
	return base + "[" + strconv.Quote(key) + "]"
}

// joinIndex appends an array index to base: "functions" + 3 = "functions[3]".
func joinIndex(base string, i int) string {
	return base + "[" + strconv.Itoa(i) + "]"
}

func isSimpleKey(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		if !isNameByte(key[i]) {
			return false
		}
	}
	return true
}

// isNameByte reports whether c is in [a-zA-Z0-9_-].
func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// ValidFunctionName reports whether name matches ^[a-zA-Z0-9_-]{1,64}$, the
// rule of spec 1.1.0 "Function Object" (name).
func ValidFunctionName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isNameByte(name[i]) {
			return false
		}
	}
	return true
}
