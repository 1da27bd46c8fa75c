// `import ActomatonUI` brings the async layer too, as upstream: views and their stores name
// `Reducer`, `Effect` and `Actomaton` without a second import.
@_exported import Actomaton
