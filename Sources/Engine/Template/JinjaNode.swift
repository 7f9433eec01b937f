/// A statement or piece of output in a parsed template.
indirect enum JinjaNode {
    /// Where `set` stores a value: plain names (several unpack a sequence) or a namespace
    /// attribute (`ns.name`).
    enum Target {
        case names([String])
        case attribute(String, String)
    }

    struct Branch {
        let condition: JinjaExpression
        let body: [JinjaNode]
    }

    struct Loop {
        let targets: [String]
        let iterable: JinjaExpression
        let condition: JinjaExpression?
        let body: [JinjaNode]
        let otherwise: [JinjaNode]
    }

    case text(String)
    case output(JinjaExpression)
    case conditional([Branch], otherwise: [JinjaNode])
    case loop(Loop)
    case set(Target, JinjaExpression)
    case setBlock(Target, [JinjaNode])
    case macro(JinjaMacro)
    case breakLoop
    case continueLoop
    /// A block whose output is its body's (`{% generation %}`, which HF uses to mark
    /// assistant text for training masks).
    case group([JinjaNode])
}
