"""The S2 model and feature frontend, as the runner trains them and the estimator builds them: FunASR's own classes."""

from __future__ import annotations

INSTALL = ("pip install --no-deps funasr==1.4.16 librosa "
           "&& pip install kaldi-native-fbank kaldiio rapidfuzz lazy_loader torch_complex")
RATE = 16000


def funasr():
    """FunASR's model and frontend classes, or MissingDependency (the case is skipped with it) saying how to install them.

    The memtest checks find_spec("funasr") at collection; the import itself can still fail here
    (a dependency FunASR does not declare, a wheel for another Python): that is a skip too.
    """
    from gpu_budget.requires import optional_import

    optional_import("kaldi_native_fbank", INSTALL)  # FunASR's fbank backend when torchaudio is absent
    frontend = optional_import("funasr.frontends.wav_frontend", INSTALL)
    paraformer = optional_import("funasr.models.paraformer.model", INSTALL)
    return paraformer.Paraformer, frontend.WavFrontend


def frontend(WavFrontend):
    """80-dim kaldi fbank, 10 ms frames, LFR m=7 n=6 (560-dim features), no dither: Paraformer-large's frontend."""
    return WavFrontend(fs=RATE, window="hamming", n_mels=80, frame_length=25, frame_shift=10, lfr_m=7, lfr_n=6,
                       dither=0.0)


def model_config(p: dict) -> dict:
    """Paraformer-large's config.yaml as a dict, with the sizes taken from params (tiny or real)."""
    h = p["hidden"]
    return {
        "specaug": "SpecAugLFR",
        "specaug_conf": {"apply_time_warp": False, "apply_freq_mask": True, "freq_mask_width_range": [0, 30],
                         "lfr_rate": 6, "num_freq_mask": 1, "apply_time_mask": True,
                         "time_mask_width_range": [0, 12], "num_time_mask": 1},
        "encoder": "SANMEncoder",
        "encoder_conf": {"output_size": h, "attention_heads": p["heads"], "linear_units": p["ffn"],
                         "num_blocks": p["encoder_blocks"], "dropout_rate": 0.1, "positional_dropout_rate": 0.1,
                         "attention_dropout_rate": 0.1, "input_layer": "pe",
                         "pos_enc_class": "SinusoidalPositionEncoder", "normalize_before": True,
                         "kernel_size": 11, "sanm_shfit": 0, "selfattention_layer_type": "sanm"},
        "decoder": "ParaformerSANMDecoder",
        "decoder_conf": {"attention_heads": p["heads"], "linear_units": p["ffn"], "num_blocks": p["decoder_blocks"],
                         "dropout_rate": 0.1, "positional_dropout_rate": 0.1, "self_attention_dropout_rate": 0.1,
                         "src_attention_dropout_rate": 0.1, "att_layer_num": p["decoder_blocks"],
                         "kernel_size": 11, "sanm_shfit": 0},
        "predictor": "CifPredictorV2",
        "predictor_conf": {"idim": h, "threshold": 1.0, "l_order": 1, "r_order": 1, "tail_threshold": 0.45},
        "input_size": 80 * 7,  # LFR m=7 of 80-dim fbank
        "vocab_size": p["vocab"],
        "ctc_weight": 0.0, "lsm_weight": 0.1, "length_normalized_loss": True,
        "predictor_weight": 1.0, "predictor_bias": 1, "sampling_ratio": 0.75,
    }

