/// Runs a parsed template: statements here, expressions in `JinjaEvaluator+Expressions.swift`,
/// filters, tests and methods in their own files. Counts steps, loop iterations, nesting and
/// output against `JinjaLimits`; it has no access to files, the environment or clocks (its
/// `strftime_now` formats the time its caller hands it, and is undefined without one).
final class JinjaEvaluator {
    enum Flow {
        case normal
        case breakLoop
        case continueLoop
    }

    let limits: JinjaLimits
    var steps = 0
    var loopIterations = 0
    var depth = 0
    var macroDepth = 0
    /// Innermost last; index 0 holds the context and template-level `set`s.
    var scopes: [[String: JinjaValue]]
    var output = JinjaString()
    /// What `strftime_now` formats (the request's time, given by the caller); nil: no such function.
    let now: JinjaTime?

    init(context: [String: JinjaValue], limits: JinjaLimits, now: JinjaTime? = nil) {
        self.limits = limits
        self.scopes = [context]
        self.now = now
    }

    func run(_ nodes: [JinjaNode]) throws(JinjaError) -> JinjaString {
        _ = try execute(nodes)
        return output
    }

    // MARK: Budgets

    func step(_ cost: Int = 1) throws(JinjaError) {
        steps += cost
        if steps > limits.maxSteps { throw .limitExceeded(.steps, limit: limits.maxSteps) }
    }

    func enter() throws(JinjaError) {
        depth += 1
        if depth > limits.maxNesting { throw .limitExceeded(.nesting, limit: limits.maxNesting) }
    }

    func leave() { depth -= 1 }

    /// Checks a newly made value against the size bound, charging steps for its bytes.
    func checked(_ value: JinjaValue) throws(JinjaError) -> JinjaValue {
        switch value {
        case .string(let text):
            try step(text.utf8Count / 64)
            if text.utf8Count > limits.maxValueSize { throw .limitExceeded(.valueSize, limit: limits.maxValueSize) }
        case .list(let items):
            try step(items.count / 64)
            if items.count > limits.maxValueSize { throw .limitExceeded(.valueSize, limit: limits.maxValueSize) }
        case .dict(let pairs):
            try step(pairs.count / 64)
            if pairs.count > limits.maxValueSize { throw .limitExceeded(.valueSize, limit: limits.maxValueSize) }
        default: break
        }
        return value
    }

    /// Checks that a list or dict just built does not nest deeper than `maxNesting` (so
    /// printing, comparing or serializing it cannot exhaust the stack), charging a step per item.
    func checkedNesting(_ value: JinjaValue) throws(JinjaError) -> JinjaValue {
        func walk(_ value: JinjaValue, _ level: Int) throws(JinjaError) {
            guard level <= limits.maxNesting else { throw .limitExceeded(.nesting, limit: limits.maxNesting) }
            switch value {
            case .list(let items):
                for item in items {
                    try step()
                    try walk(item, level + 1)
                }
            case .dict(let pairs):
                for pair in pairs {
                    try step()
                    try walk(pair.value, level + 1)
                }
            default: break
            }
        }
        try walk(value, 1)
        return try checked(value)
    }

    func emit(_ text: JinjaString) throws(JinjaError) {
        try step(text.utf8Count / 64)
        output.append(text)
        if output.utf8Count > limits.maxOutputBytes {
            throw .limitExceeded(.outputLength, limit: limits.maxOutputBytes)
        }
    }

    // MARK: Variables

    func lookup(_ name: String) -> JinjaValue {
        for scope in scopes.reversed() {
            if let value = scope[name] { return value }
        }
        switch name {
        case "raise_exception", "namespace", "range", "dict": return .function(name)
        case "strftime_now" where now != nil: return .function(name)
        default: return .undefined(name)
        }
    }

    func assign(_ name: String, _ value: JinjaValue) {
        scopes[scopes.count - 1][name] = value
    }

    // MARK: Statements

    func execute(_ nodes: [JinjaNode]) throws(JinjaError) -> Flow {
        for node in nodes {
            let flow = try execute(node)
            if flow != .normal { return flow }
        }
        return .normal
    }

    private func execute(_ node: JinjaNode) throws(JinjaError) -> Flow {
        try step()
        try enter()
        defer { leave() }
        switch node {
        case .text(let text):
            try emit(JinjaString(text, origin: .template))
        case .output(let expression):
            try emit(try evaluate(expression).rendered())
        case .conditional(let branches, let otherwise):
            for branch in branches where try evaluate(branch.condition).isTruthy {
                return try execute(branch.body)
            }
            return try execute(otherwise)
        case .loop(let loop):
            try runLoop(loop)
        case .set(let target, let expression):
            try store(try evaluate(expression), in: target)
        case .setBlock(let target, let body):
            let captured = try capture(body)
            try store(.string(captured), in: target)
        case .macro(let macro):
            assign(macro.name, .macro(macro))
        case .breakLoop:
            return .breakLoop
        case .continueLoop:
            return .continueLoop
        case .group(let body):
            return try execute(body)
        }
        return .normal
    }

    /// Runs `body` with its own output buffer and returns what it wrote.
    func capture(_ body: [JinjaNode]) throws(JinjaError) -> JinjaString {
        let saved = output
        output = JinjaString()
        defer { output = saved }
        _ = try execute(body)
        return output
    }

    private func store(_ value: JinjaValue, in target: JinjaNode.Target) throws(JinjaError) {
        switch target {
        case .names(let names) where names.count == 1:
            assign(names[0], value)
        case .names(let names):
            let items = try iterate(value)
            guard items.count == names.count else {
                throw .evaluation("cannot unpack \(items.count) values into \(names.count) names")
            }
            for (name, item) in zip(names, items) { assign(name, item) }
        case .attribute(let object, let attribute):
            guard case .namespace(let namespace) = lookup(object) else {
                throw .evaluation("cannot set '\(attribute)' on '\(object)', which is not a namespace")
            }
            namespace[attribute] = value
        }
    }

    /// The items a `for` loop visits: list items, dict keys, string characters; nothing for
    /// undefined (as jinja2's `Undefined` iterates empty).
    func iterate(_ value: JinjaValue) throws(JinjaError) -> [JinjaValue] {
        switch value {
        case .list(let items): return items
        case .dict(let pairs): return pairs.map { .string($0.key, origin: .data) }
        case .string(let text):
            // One value per character: bounded before it is built, like the loop over it.
            guard
                text.utf8Count <= limits.maxLoopIterations || text.text.unicodeScalars.count <= limits.maxLoopIterations
            else { throw .limitExceeded(.loopIterations, limit: limits.maxLoopIterations) }
            return text.scalarsWithOrigins.map { .string(JinjaString.from([$0][...])) }
        case .undefined: return []
        default: throw .evaluation("a \(value.typeName) is not iterable")
        }
    }

    private func runLoop(_ loop: JinjaNode.Loop) throws(JinjaError) {
        var items = try iterate(try evaluate(loop.iterable))
        scopes.append([:])
        defer { scopes.removeLast() }
        if let condition = loop.condition {
            var kept: [JinjaValue] = []
            for item in items {
                try countIteration()
                try bind(loop.targets, to: item)
                if try evaluate(condition).isTruthy { kept.append(item) }
            }
            items = kept
        }
        if items.isEmpty {
            _ = try execute(loop.otherwise)
            return
        }
        let count = items.count
        for (offset, item) in items.enumerated() {
            try countIteration()
            scopes[scopes.count - 1] = [:]
            try bind(loop.targets, to: item)
            let info: [(key: String, value: JinjaValue)] = [
                ("index", .int(offset + 1)), ("index0", .int(offset)), ("first", .bool(offset == 0)),
                ("last", .bool(offset == count - 1)), ("length", .int(count)), ("revindex", .int(count - offset)),
                ("revindex0", .int(count - offset - 1)),
                ("previtem", offset > 0 ? items[offset - 1] : .undefined("previtem")),
                ("nextitem", offset + 1 < count ? items[offset + 1] : .undefined("nextitem")),
            ]
            assign("loop", .dict(info))
            if try execute(loop.body) == .breakLoop { break }
        }
    }

    private func countIteration() throws(JinjaError) {
        loopIterations += 1
        if loopIterations > limits.maxLoopIterations {
            throw .limitExceeded(.loopIterations, limit: limits.maxLoopIterations)
        }
        try step()
    }

    private func bind(_ targets: [String], to item: JinjaValue) throws(JinjaError) {
        if targets.count == 1 {
            assign(targets[0], item)
            return
        }
        let parts = try iterate(item)
        guard parts.count == targets.count else {
            throw .evaluation("cannot unpack \(parts.count) values into \(targets.count) loop variables")
        }
        for (name, part) in zip(targets, parts) { assign(name, part) }
    }

    /// Calls a macro with its own scope (the template's top level plus its parameters).
    func call(_ macro: JinjaMacro, _ arguments: [JinjaValue], _ named: [String: JinjaValue]) throws(JinjaError)
        -> JinjaValue
    {
        macroDepth += 1
        defer { macroDepth -= 1 }
        if macroDepth > limits.maxMacroCalls { throw .limitExceeded(.macroCalls, limit: limits.maxMacroCalls) }
        guard arguments.count <= macro.parameters.count else {
            throw .evaluation("macro '\(macro.name)' takes \(macro.parameters.count) arguments")
        }
        var local: [String: JinjaValue] = [:]
        for (index, parameter) in macro.parameters.enumerated() {
            if index < arguments.count {
                local[parameter.name] = arguments[index]
            } else if let value = named[parameter.name] {
                local[parameter.name] = value
            } else if let defaultValue = parameter.defaultValue {
                local[parameter.name] = try evaluate(defaultValue)
            } else {
                local[parameter.name] = .undefined(parameter.name)
            }
        }
        let savedScopes = scopes
        scopes = [scopes[0], local]
        defer { scopes = savedScopes }
        return .string(try capture(macro.body))
    }
}
