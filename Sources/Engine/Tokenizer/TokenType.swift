/// The values of `tokenizer.ggml.token_type`, as llama.cpp defines them.
enum TokenType: Int32 {
    case undefined = 0
    case normal = 1
    case unknown = 2
    case control = 3
    case userDefined = 4
    case unused = 5
    case byte = 6
}
