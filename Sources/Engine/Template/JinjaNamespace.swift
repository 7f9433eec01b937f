/// The mutable object `namespace(...)` makes, the one thing a template can change from inside
/// a loop (`{% set ns.found = true %}`).
final class JinjaNamespace {
    var attributes: [(key: String, value: JinjaValue)]

    init(_ attributes: [(key: String, value: JinjaValue)]) {
        self.attributes = attributes
    }

    subscript(name: String) -> JinjaValue? {
        get { attributes.first { $0.key == name }?.value }
        set {
            guard let newValue else { return }
            if let index = attributes.firstIndex(where: { $0.key == name }) {
                attributes[index].value = newValue
            } else {
                attributes.append((name, newValue))
            }
        }
    }
}
