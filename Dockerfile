# The playground for a GPU host:
#   docker build -t triton-playground .
#   docker run --gpus all -p 8000:8000 -e SECRET_KEY=... -v playground-data:/srv/instance triton-playground
# Scale out (docs/scale-out.md): the same image as one Celery worker per GPU, on any host (its
# healthcheck is the web process's: off for a worker; /healthz lists the workers online):
#   docker run --gpus '"device=0"' --no-healthcheck -e REDIS_URL=redis://:password@redis-host:6379/0 triton-playground python3 -m app.dispatch.celery_worker
# More Triton versions beside the default (requirements.txt's): name them when building, and each is
# baked into a directory of its own under TRITONS_DIR (outside the instance volume), with a worker of
# its own in the server; a Celery worker runs one of them with WORKER_TRITON:
#   docker build --build-arg TRITON_VERSIONS="3.8.0 3.7.1" -t triton-playground .
#   docker run --gpus '"device=1"' --no-healthcheck -e REDIS_URL=... -e WORKER_TRITON=3.8.0 triton-playground python3 -m app.dispatch.celery_worker
FROM nvidia/cuda:12.8.1-base-ubuntu24.04

ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1 PYTHONUNBUFFERED=1
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*

# The venv lives outside /root: where namespaces are not allowed, a run (dropped to a uid of its own)
# still imports from it.
RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
COPY requirements.txt requirements-scale.txt /srv/
# torch's CUDA build first, so the pinned requirements find it already satisfied. That build pins the
# Triton it was made with; the playground's default is requirements.txt's, installed over it without
# dependencies (torch's own compiler, which would want its pin, is not what runs kernels here). The
# image is also a scale-out worker: celery and redis too.
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128 \
    && grep -v '^triton==' /srv/requirements.txt > /tmp/requirements-but-triton.txt \
    && pip install -r /tmp/requirements-but-triton.txt -r /srv/requirements-scale.txt \
    && pip install --no-deps "$(grep '^triton==' /srv/requirements.txt)"

# The added versions, without their dependencies: torch is the environment's (docs/configuration.md, TRITON_VERSIONS).
ARG TRITON_VERSIONS=""
ENV TRITONS_DIR=/opt/tritons TRITON_VERSIONS=$TRITON_VERSIONS
RUN for version in $TRITON_VERSIONS; do pip install --no-deps --target "$TRITONS_DIR/$version" "triton==$version" || exit 1; done

WORKDIR /srv
COPY app app
COPY sandbox sandbox
COPY kernels kernels
COPY static static
COPY templates templates

ENV HOST=0.0.0.0 PORT=8000 DATABASE=/srv/instance/playground.sqlite TRITON_CACHE_DIR=/tmp/triton-cache
EXPOSE 8000
HEALTHCHECK --interval=30s --start-period=60s CMD python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz')"
# The web process as `make run` starts it: gunicorn, one gevent worker (app/serve.py).
CMD ["python3", "-m", "app.serve"]
