#!/usr/bin/env python3
"""Independently verify a Sign in with Apple client secret (ES256 compact JWS).

Usage: verify-client-secret.py PUBLIC_KEY_PEM_FILE [TOKEN_FILE|-]
The token is read from TOKEN_FILE, or from stdin when omitted or '-'.
Checks: three segments; header alg ES256 with a kid; the signature segment is exactly
64 bytes of raw R||S (not DER); the ECDSA P-256/SHA-256 signature verifies with the Python
`cryptography` package; claims aud/iss/sub/iat/exp are present and exp - iat <= 15777000.
Exit status: 0 valid, 1 invalid, 2 usage or missing dependency.
Never prints the token itself.
"""
import base64
import json
import sys


def b64url_decode(segment: str) -> bytes:
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def main(argv):
    if len(argv) < 2 or len(argv) > 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
    except ImportError:
        print("the Python 'cryptography' package is not installed "
              "(apt-get install python3-cryptography, or pip install cryptography)", file=sys.stderr)
        return 2

    with open(argv[1], "rb") as f:
        public_key = serialization.load_pem_public_key(f.read())
    if not isinstance(public_key, ec.EllipticCurvePublicKey) or public_key.curve.name != "secp256r1":
        print("FAIL: the public key is not EC P-256", file=sys.stderr)
        return 1
    source = sys.stdin if len(argv) == 2 or argv[2] == "-" else open(argv[2])
    token = source.read().strip()

    parts = token.split(".")
    if len(parts) != 3:
        print(f"FAIL: expected 3 segments, got {len(parts)}", file=sys.stderr)
        return 1
    header = json.loads(b64url_decode(parts[0]))
    claims = json.loads(b64url_decode(parts[1]))
    signature = b64url_decode(parts[2])
    problems = []
    if header.get("alg") != "ES256":
        problems.append(f"header alg is {header.get('alg')!r}, expected ES256")
    if not header.get("kid"):
        problems.append("header has no kid")
    if len(signature) != 64:
        problems.append(f"signature is {len(signature)} bytes; raw R||S must be 64 (DER starts 0x30)")
    else:
        r = int.from_bytes(signature[:32], "big")
        s = int.from_bytes(signature[32:], "big")
        signing_input = (parts[0] + "." + parts[1]).encode("ascii")
        try:
            public_key.verify(encode_dss_signature(r, s), signing_input, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            problems.append("ECDSA signature does not verify with this public key")
    for claim in ("iss", "iat", "exp", "aud", "sub"):
        if claim not in claims:
            problems.append(f"claim {claim} missing")
    if claims.get("aud") != "https://appleid.apple.com":
        problems.append("aud is not https://appleid.apple.com")
    if isinstance(claims.get("exp"), int) and isinstance(claims.get("iat"), int):
        if claims["exp"] - claims["iat"] > 15777000:
            problems.append("exp - iat exceeds 15777000 s")
    if problems:
        for p in problems:
            print("FAIL: " + p, file=sys.stderr)
        return 1
    print(f"Verified OK (kid={header['kid']} iss={claims['iss']} sub={claims['sub']} exp={claims['exp']})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
