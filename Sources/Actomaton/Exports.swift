// `import Actomaton` brings the whole async layer, the core it stands on, and CasePaths
// (for `@CasePathable` and case-path composition), as the seed examples expect.
@_exported import ActomatonCore
@_exported import ActomatonEffect
@_exported import CasePaths
