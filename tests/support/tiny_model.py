"""Small sequence-classification models built from a config, for the local-model judge.

No model hub is reachable here, so tests and benches build a BERT classifier from a
``BertConfig`` and save it with ``save_pretrained``, exactly as a user's downloaded model
folder would look.

``build_oracle_model`` wires the weights by hand so that its output is known in advance:
every weight is zero except

- the word embeddings of the ``evidence_words``, each on its own hidden dimension;
- one encoder layer whose attention is uniform (query/key zero) and passes values through,
  so the [CLS] vector says which evidence words occur anywhere in the input;
- the classifier row of the supported label, which reads those dimensions.

So a window that contains one evidence word ``w`` gets ``logit[supported] = bias + strength[w]``
(several words: roughly the sum) and a window without any gets exactly ``softmax(bias)``. (Evidence words in the statement
count too: keep them out of test statements.)
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import torch
from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
NLI_LABELS = ("entailment", "neutral", "contradiction")

# Words of the medical test pages, so the tokenizer sees real words rather than [UNK].
BASE_WORDS = """
the a an of and or in on to is are was were be by for with as at from that this these those it its
than more less most high higher low lower level levels patient patients adult adults child children
iron ferritin serum transferrin saturation overload hemochromatosis hfe gene c282y homozygote
homozygotes liver disease cirrhosis diabetes heart blood test tests testing treatment therapy
phlebotomy weekly monthly removal removes remove dose doses daily mg ml per year years percent
men women male female risk risks people common rare symptom symptoms fatigue joint pain skin
doctor doctors clinic hospital study studies trial trials showed shown found report reported
vitamin c d supplement supplements avoid alcohol diet food foods meat red raw shellfish
aspirin ibuprofen fever headache influenza vaccine vaccines season annual children's
hypertension pressure systolic diastolic reading readings target mmhg below above
may can should not no every each all some many few often usually also however because
page section contents menu home about contact privacy policy cookies copyright rights reserved
""".split()


def vocab_for(words: Iterable[str]) -> dict[str, int]:
    """A WordPiece vocabulary: the specials, single characters, then the given words."""
    vocab: dict[str, int] = {}
    for token in (*SPECIALS, *"abcdefghijklmnopqrstuvwxyz0123456789.,;:!?'\"()-%/",
                  *(w.lower() for w in words)):
        vocab.setdefault(token, len(vocab))
    return vocab


def words_of(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _tokenizer(vocab: Mapping[str, int], max_length: int) -> BertTokenizerFast:
    # vocab= must be a dict: transformers 5 silently ignores vocab_file= (every word -> [UNK])
    return BertTokenizerFast(vocab=dict(vocab), do_lower_case=True, model_max_length=max_length)


def _config(vocab_size: int, labels: Sequence[str], max_length: int, hidden_size: int,
            layers: int, heads: int, intermediate: int, dropout: float = 0.0) -> BertConfig:
    return BertConfig(
        vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=layers,
        num_attention_heads=heads, intermediate_size=intermediate,
        max_position_embeddings=max_length, hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        id2label={i: name for i, name in enumerate(labels)},
        label2id={name: i for i, name in enumerate(labels)},
    )


def build_oracle_model(folder: Path, *, labels: Sequence[str] = NLI_LABELS,
                       supported_index: int = 0,
                       evidence_words: Mapping[str, float] | None = None,
                       bias: Sequence[float] | None = None,
                       extra_words: Iterable[str] = (), max_length: int = 128,
                       hidden_size: int = 32) -> Path:
    """Save a model whose supported-label logit is ``bias + strength`` of the evidence words present."""
    evidence_words = dict(evidence_words or {})
    if len(evidence_words) >= hidden_size - 1:
        raise ValueError("one hidden dimension per evidence word: raise hidden_size")
    vocab = vocab_for([*BASE_WORDS, *evidence_words, *extra_words])
    config = _config(len(vocab), labels, max_length, hidden_size, layers=1, heads=1,
                     intermediate=hidden_size)
    torch.manual_seed(0)
    model = BertForSequenceClassification(config).eval()
    eye = torch.eye(hidden_size)
    with torch.no_grad():
        for param in model.parameters():
            param.zero_()
        for name, param in model.named_parameters():
            if name.endswith("LayerNorm.weight"):
                param.fill_(1.0)
        layer = model.bert.encoder.layer[0]
        layer.attention.self.value.weight.copy_(eye)
        layer.attention.output.dense.weight.copy_(eye)
        model.bert.pooler.dense.weight.copy_(eye)
        # One present word's dimension ends at tanh(sqrt(H-1)), every other at tanh(-1/sqrt(H-1))
        # (LayerNorm centres the vector); a never-used sink dimension cancels the off values,
        # so a window with one evidence word scores exactly bias + strength.
        on, off = math.tanh(math.sqrt(hidden_size - 1)), math.tanh(-1 / math.sqrt(hidden_size - 1))
        sink = hidden_size - 1
        for dim, (word, strength) in enumerate(evidence_words.items()):
            model.bert.embeddings.word_embeddings.weight[vocab[word.lower()], dim] = 10.0
            model.classifier.weight[supported_index, dim] = float(strength) / (on - off)
            model.classifier.weight[supported_index, sink] -= float(strength) / (on - off)
        if bias is not None:
            model.classifier.bias.copy_(torch.tensor([float(b) for b in bias]))
    return _save(folder, model, _tokenizer(vocab, max_length))


def build_random_model(folder: Path, *, labels: Sequence[str] = NLI_LABELS, max_length: int = 512,
                       hidden_size: int = 128, layers: int = 2, heads: int = 2,
                       intermediate: int = 512, extra_words: Iterable[str] = (), seed: int = 0,
                       dropout: float = 0.0) -> Path:
    """Save a randomly initialised BERT classifier of the given size (for timing, not accuracy); ``dropout``
    as all-MiniLM-L6-v2's 0.1 where training's random state matters."""
    vocab = vocab_for([*BASE_WORDS, *extra_words])
    config = _config(len(vocab), labels, max_length, hidden_size, layers, heads, intermediate, dropout)
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config).eval()
    return _save(folder, model, _tokenizer(vocab, max_length))


def _save(folder: Path, model: BertForSequenceClassification, tokenizer: BertTokenizerFast) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_seq2seq_checker(folder: Path, *, evidence_words: Iterable[str], present: float = 3.0,
                          absent: float = 2.0, extra_words: Iterable[str] = (), d_model: int = 16) -> Path:
    """Save a T5 checker of the MiniCheck-Flan-T5 kind with a known answer at the first decoder step.

    Every weight is zero except: the evidence words' embeddings (dimension 0), the decoder start
    token's embedding (dimension 1), cross-attention that averages the encoder output (values scaled
    far up, so one evidence word anywhere dominates), and the "1"/"0" rows of the output layer. So
    ``P("1")`` is ``sigmoid(present)`` when the input holds an evidence word and ``sigmoid(-absent)``
    when it holds none (up to a part in a thousand).
    """
    from transformers import T5Config, T5ForConditionalGeneration

    words = [w.lower() for w in evidence_words]
    vocab = vocab_for([*BASE_WORDS, *words, *extra_words, "premise", "hypothesis"])
    config = T5Config(vocab_size=len(vocab), d_model=d_model, d_kv=d_model, d_ff=d_model, num_layers=1,
                      num_decoder_layers=1, num_heads=1, tie_word_embeddings=False, dropout_rate=0.0,
                      decoder_start_token_id=vocab["[PAD]"], pad_token_id=vocab["[PAD]"],
                      eos_token_id=vocab["[SEP]"])
    model = T5ForConditionalGeneration(config).eval()
    scale = math.sqrt(d_model)
    with torch.no_grad():
        for param in model.parameters():
            param.zero_()
        for name, param in model.named_parameters():
            if "layer_norm" in name:
                param.fill_(1.0)
        for word in words:
            model.shared.weight[vocab[word], 0] = 10.0
        model.shared.weight[vocab["[PAD]"], 1] = 1.0
        cross = model.decoder.block[0].layer[1].EncDecAttention
        cross.v.weight.copy_(torch.eye(d_model) * 1e5)
        cross.o.weight.copy_(torch.eye(d_model))
        model.lm_head.weight[vocab["1"], 0] = present / scale
        model.lm_head.weight[vocab["0"], 1] = absent / scale
    return _save(folder, model, _tokenizer(vocab, 512))  # type: ignore[arg-type]
