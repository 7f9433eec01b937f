/// The engine's public API speaks the generation vocabulary (events, results, errors, sampling
/// options, messages, grammars), so whoever imports the engine gets it too, as when these types
/// lived here.
@_exported import GenerationVocabulary
