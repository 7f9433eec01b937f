/// Built-in chat templates for `--chat-template NAME`, written for inferd as Jinja text that
/// renders what each family's official template renders for plain system/user/assistant
/// conversations (no tools).
extension ChatTemplate {
    public static let builtIns: [String: String] = [
        "chatml": chatML, "llama3": llama3, "gemma": gemma, "qwen": qwen, "phi3": phi3,
    ]

    /// Phi-3 and Phi-3.5 (as llama.cpp's built-in `phi3`): `<|role|>\ncontent<|end|>\n` per
    /// message, then `<|assistant|>\n`.
    static let phi3 = #"""
        {%- for message in messages -%}
        {{ '<|' ~ message.role ~ '|>\n' ~ message.content ~ '<|end|>\n' }}
        {%- endfor -%}
        {%- if add_generation_prompt -%}{{ '<|assistant|>\n' }}{%- endif -%}
        """#

    /// `<|im_start|>role\ncontent<|im_end|>\n` per message.
    static let chatML = #"""
        {%- for message in messages -%}
        {{ '<|im_start|>' ~ message.role ~ '\n' ~ message.content ~ '<|im_end|>\n' }}
        {%- endfor -%}
        {%- if add_generation_prompt -%}{{ '<|im_start|>assistant\n' }}{%- endif -%}
        """#

    /// Llama 3: BOS before the first message, then a header per message, its trimmed content
    /// and `<|eot_id|>`.
    static let llama3 = #"""
        {%- for message in messages -%}
        {%- if loop.first -%}{{ bos_token }}{%- endif -%}
        {{ '<|start_header_id|>' ~ message.role ~ '<|end_header_id|>\n\n' ~ (message.content | trim) ~ '<|eot_id|>' }}
        {%- endfor -%}
        {%- if add_generation_prompt -%}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif -%}
        """#

    /// Gemma (2 and 3): BOS, a system message folded into the first user turn, the assistant
    /// called `model`, user and model turns alternating.
    static let gemma = #"""
        {{- bos_token -}}
        {%- set prefix = namespace(text='') -%}
        {%- set turns = messages -%}
        {%- if messages and messages[0].role == 'system' -%}
        {%- set prefix.text = messages[0].content ~ '\n\n' -%}
        {%- set turns = messages[1:] -%}
        {%- endif -%}
        {%- for message in turns -%}
        {%- if (message.role == 'user') != loop.index0 is even -%}
        {{ raise_exception('gemma: conversation roles must alternate user/assistant/user/assistant/...') }}
        {%- endif -%}
        {{ '<start_of_turn>' ~ ('model' if message.role == 'assistant' else message.role) ~ '\n' }}
        {%- if loop.first -%}{{ prefix.text }}{%- endif -%}
        {{ message.content | trim }}{{ '<end_of_turn>\n' }}
        {%- endfor -%}
        {%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}
        """#

    /// Qwen 2.5: ChatML with Qwen's default system message when the conversation has none.
    static let qwen = #"""
        {%- if not messages or messages[0].role != 'system' -%}
        {{ '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
        {%- endif -%}
        {%- for message in messages -%}
        {{ '<|im_start|>' ~ message.role ~ '\n' ~ message.content ~ '<|im_end|>\n' }}
        {%- endfor -%}
        {%- if add_generation_prompt -%}{{ '<|im_start|>assistant\n' }}{%- endif -%}
        """#
}
