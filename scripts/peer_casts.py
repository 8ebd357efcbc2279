"""peer_casts.py — the peers' casts, shared by scripts/peers.py (fp8 conversions) and
scripts/peers_elements.py (fp4/fp6/fp8 element casts, E8M0): how each peer is loaded, named and
described, and how it casts a numpy array to one of its dtypes.

A peer has: name, version, device (in words), dtype(name) (its dtype of that ml_dtypes name, or
None), describe(domain, name) (how the call is made) and cast(x, name) -> np.uint8 array of the
codes of the numpy array x (float32, float16 or ml_dtypes bfloat16) in dtype name.
"""


class NotInstalled(Exception):
    """The peer cannot run here: not installed, or (torch-cuda) no CUDA device."""

    def __init__(self, detail, reason="not installed"):
        super().__init__(detail)
        self.reason = reason


class MlDtypes:
    name = "ml_dtypes"

    def __init__(self):
        try:
            import ml_dtypes
        except ImportError as e:
            raise NotInstalled(str(e))
        self.m, self.version, self.device = ml_dtypes, ml_dtypes.__version__, "cpu"

    def dtype(self, name):
        return getattr(self.m, name, None)

    def describe(self, domain, name):
        src = {"f32": "numpy.float32", "f16": "numpy.float16", "bf16": "ml_dtypes.bfloat16"}
        return f"{src[domain]} array .astype(ml_dtypes.{name})"

    def cast(self, x, name):
        return x.astype(self.dtype(name)).view("u1")


class Torch:
    # torch's dtype for an element where its name differs from ml_dtypes's
    NAMES = {"float4_e2m1fn": "float4_e2m1fn_x2"}

    def __init__(self, device):
        try:
            import torch
        except ImportError as e:
            raise NotInstalled(str(e))
        self.t, self.dev, self.name = torch, device, "torch-" + device
        self.version = torch.__version__
        if device == "cuda":
            if not torch.cuda.is_available():
                raise NotInstalled(f"torch {torch.__version__} sees no CUDA device", "no CUDA device")
            self.device = (f"cuda ({torch.cuda.get_device_name(0)}, "
                           f"CUDA {torch.version.cuda})")
        else:
            self.device = f"cpu ({torch.get_num_threads()} threads)"

    def dtype(self, name):
        return getattr(self.t, self.NAMES.get(name, name), None)

    def describe(self, domain, name):
        src = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}[domain]
        return f"torch.{src} tensor on {self.dev} .to(torch.{self.NAMES.get(name, name)})"

    def cast(self, x, name):
        torch = self.t
        if x.dtype.name == "bfloat16":
            t = torch.from_numpy(x.view("i2")).view(torch.bfloat16)
        else:
            t = torch.from_numpy(x)
        if self.dev == "cuda":
            t = t.to("cuda")
        q = t.to(self.dtype(name)).view(torch.uint8)
        return q.cpu().numpy()
