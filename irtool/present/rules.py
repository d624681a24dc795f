"""The classification rules of communication nodes (docs/parallel.md §2) in words, for people: a panel says
`pipeline Send/Receive (R5)`, not `R5`."""
from __future__ import annotations

RULE_WORDS = {
    "R1": "mirror operator: a replicated parameter's gradient AllReduce",
    "R2": "per-step gather of an optimizer-sharded parameter",
    "R3": "gather of an optimizer-sharded parameter (parallel_optimizer)",
    "R3a": "a micro step's gradient reduce-scattered into the sharded accumulation (optimizer level 2/3)",
    "R4": "gradient AllReduce of a replicated parameter (grad_mirror)",
    "R5": "pipeline Send/Receive (pipeline marks)",
    "R5b": "Send/Receive without pipeline marks",
    "R5r": "the last stage's result broadcast to every stage (pipeline_result_broadcast)",
    "R6": "redistribution between two strategies (redistribution_op)",
    "R6k": "layout conversion of the forward graph (kernel graph)",
    "R6s": "a layer output kept sliced until its recompute, gathered back (recompute_allgather)",
    "R7": "a sharded operator's own communication (forward_op)",
    "R7k": "a sharded operator's partial results summed (kernel graph)",
    "R7b": "an operator's replace graph (a vocabulary-sharded embedding)",
    "R8": "data-parallel gradient reducer (grad_reducer)",
    "R9": "ring-attention exchange (flash sequence-parallel marks)",
    "R10": "no rule matched",
    "R11": "expert-parallel all-to-all",
    "R12": "sequence-parallel collective",
    "R13": "Ulysses context-parallel all-to-all around attention",
}
# what a rule's suffix adds (`R11-dispatch`, `R6-inherited`)
SUFFIX_WORDS = {"inherited": "as its forward counterpart", "paired": "the other half of such an exchange",
                "dispatch": "dispatching to the experts", "combine": "combining the experts' outputs",
                "scatter": "ReduceScatter", "gather": "AllGather", "ulysses": "", "contradiction": "names disagree"}


def rule_text(rule: str) -> str:
    """A rule in words, its code after them: `R11-combine-inherited` -> `expert-parallel all-to-all, combining
    the experts' outputs, as its forward counterpart (R11-combine-inherited)`; an unknown code as it is."""
    code, *suffixes = rule.split("-")
    words = RULE_WORDS.get(code)
    if words is None:
        return rule
    more = [SUFFIX_WORDS.get(s, s) for s in suffixes]
    return ", ".join([words, *(m for m in more if m)]) + f" ({rule})"
