// Package schema is the small JSON Schema subset tool inputs use: an object of typed
// properties (string, integer, number, boolean, array of strings, object), required
// names, bounds and no additional properties. One Schema value is both the definition
// advertised to the provider (MarshalJSON gives standard JSON Schema) and the validator
// that checks a raw tool input before the tool starts, naming the offending field.
//
// Pure: no I/O.
package schema
