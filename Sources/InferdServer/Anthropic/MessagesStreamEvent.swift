import HTTPServer
import StructuredOutput

/// One event of a Messages stream, as Anthropic names and shapes them: the SSE `event:` is the
/// payload's `type`.
enum MessagesStreamEvent: Sendable, Equatable {
    case messageStart(MessageBody)
    /// A block opens empty: text `""`, thinking `""`, a call with `input: {}`.
    case blockStart(index: Int, block: MessageBlock)
    case textDelta(index: Int, text: String)
    case thinkingDelta(index: Int, thinking: String)
    /// A piece of a call's `input` as JSON text; the pieces concatenate to the whole input.
    case inputJSONDelta(index: Int, partialJSON: String)
    case blockStop(index: Int)
    case messageDelta(stopReason: String, stopSequence: String?, usage: MessagesUsage)
    case messageStop
    case ping
    case error(AnthropicError)

    var name: String {
        switch self {
        case .messageStart: "message_start"
        case .blockStart: "content_block_start"
        case .textDelta, .thinkingDelta, .inputJSONDelta: "content_block_delta"
        case .blockStop: "content_block_stop"
        case .messageDelta: "message_delta"
        case .messageStop: "message_stop"
        case .ping: "ping"
        case .error: "error"
        }
    }

    var data: String {
        switch self {
        case .messageStart(let message):
            return WireJSON.string(MessageStart(message: message))
        case .blockStart(let index, let block):
            return WireJSON.string(BlockStart(index: index, contentBlock: block))
        case .textDelta(let index, let text):
            return WireJSON.string(BlockDelta(index: index, delta: ["type": "text_delta", "text": text]))
        case .thinkingDelta(let index, let thinking):
            return WireJSON.string(BlockDelta(index: index, delta: ["type": "thinking_delta", "thinking": thinking]))
        case .inputJSONDelta(let index, let json):
            return WireJSON.string(BlockDelta(index: index, delta: ["type": "input_json_delta", "partial_json": json]))
        case .blockStop(let index):
            return WireJSON.string(BlockStop(index: index))
        case .messageDelta(let reason, let sequence, let usage):
            return WireJSON.string(MessageDelta(delta: .init(stopReason: reason, stopSequence: sequence), usage: usage))
        case .messageStop:
            return #"{"type":"message_stop"}"#
        case .ping:
            return #"{"type":"ping"}"#
        case .error(let error):
            return WireJSON.string(error.envelope)
        }
    }

    private struct MessageStart: Encodable {
        var type = "message_start"
        var message: MessageBody
    }

    private struct BlockStart: Encodable {
        var type = "content_block_start"
        var index: Int
        var contentBlock: MessageBlock
        enum CodingKeys: String, CodingKey {
            case type, index
            case contentBlock = "content_block"
        }
    }

    private struct BlockDelta: Encodable {
        var type = "content_block_delta"
        var index: Int
        var delta: [String: String]
    }

    private struct BlockStop: Encodable {
        var type = "content_block_stop"
        var index: Int
    }

    private struct MessageDelta: Encodable {
        struct Delta: Encodable {
            var stopReason: String
            var stopSequence: String?
            enum CodingKeys: String, CodingKey {
                case stopReason = "stop_reason"
                case stopSequence = "stop_sequence"
            }
            func encode(to encoder: Encoder) throws {
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode(stopReason, forKey: .stopReason)
                try c.encode(stopSequence, forKey: .stopSequence)
            }
        }
        var type = "message_delta"
        var delta: Delta
        var usage: MessagesUsage
    }
}
