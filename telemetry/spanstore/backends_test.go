package spanstore

// extraBackends are further databases the store tests run on.
var extraBackends []backend
