"""The checkpoint the ranks load: a small Llama with random weights, saved as a hub checkpoint would be."""


def llama_config(p: dict):
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=p["vocab"], hidden_size=p["hidden"], intermediate_size=p["intermediate"],
                       num_hidden_layers=p["layers"], num_attention_heads=p["heads"], num_key_value_heads=p["heads"],
                       tie_word_embeddings=False)


def prepare(ctx) -> None:
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    LlamaForCausalLM._from_config(llama_config(ctx.params)).save_pretrained(f"{ctx.assets}/model")
