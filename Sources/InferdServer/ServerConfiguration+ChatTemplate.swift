import Foundation

extension ServerConfiguration {
    /// The `chat_template` setting as the engine takes it: nil (the model's own), a built-in
    /// name, or the text of the file `@path` names.
    public func chatTemplateOverride() throws(ConfigurationError) -> String? {
        let setting = chatTemplate.trimmingCharacters(in: .whitespaces)
        guard !setting.isEmpty else { return nil }
        guard setting.hasPrefix("@") else { return setting }
        let path = String(setting.dropFirst())
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ConfigurationError("chat_template: cannot read template file \(path)")
        }
        return text
    }
}
