import Engine
import Foundation

/// `inferd tokenize [--special] [--model PATH] "text"`: ids as a JSON array.
enum TokenizeCommand {
    static func run(arguments: [String]) -> Int32 {
        do {
            let options = try CommandOptions(arguments, known: ["model"], booleans: ["special"])
            guard options.positional.count == 1 else {
                return InferdCLI.fail("tokenize takes one text argument", code: 2)
            }
            let path = options.last("model") ?? ServerConfiguration().model
            let file = try GGUFFile(path: path)
            let tokenizer = try Tokenizer(gguf: file)
            let ids = tokenizer.encode(options.positional[0], parseSpecial: options.flags.contains("special"))
            print("[" + ids.map(String.init).joined(separator: ", ") + "]")
            return 0
        } catch let error as ConfigurationError {
            return InferdCLI.fail(error.description, code: 2)
        } catch {
            return InferdCLI.fail("\(error)")
        }
    }
}
