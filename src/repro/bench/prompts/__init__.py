"""What a benchmark sends: the shipped prompt sets (data/), data files and Hub datasets
(datasets), z-lab's named benchmark sets (benchsets), resolved by name in sets, and chat
templates rendered as SGLang renders them (chattemplate)."""
