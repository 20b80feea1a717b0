"""scikit-learn with array-API dispatch on hxarray arrays, against the same calls on numpy arrays:
estimators, metrics, pairwise kernels and model-selection helpers return hxarray arrays on the
inputs' device (or Python scalars) with numpy's values. scikit-learn's own array-API tests run
through `make sklearn-check` (conformance/sklearn)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

assert os.environ.get("SCIPY_ARRAY_API") == "1", "set by conftest.py before scipy is imported"

import sklearn  # noqa: E402
from sklearn import (  # noqa: E402
    decomposition,
    discriminant_analysis,
    linear_model,
    metrics,
    mixture,
    model_selection,
    preprocessing,
)
from sklearn.metrics import pairwise  # noqa: E402
from sklearn.utils import extmath  # noqa: E402

import hxarray as xp  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.standard_normal((48, 5))
X_POSITIVE = np.abs(X) + 0.1
Y_CLASS = RNG.integers(0, 3, 48)
Y_BINARY = (X[:, 0] + 0.3 * RNG.standard_normal(48) > 0).astype(np.int64)
Y_REGRESS = X @ np.arange(1.0, 6.0) + 0.1 * RNG.standard_normal(48)
SCORE = 1 / (1 + np.exp(-X[:, 0]))
PROBA = np.abs(X[:, :3]) / np.abs(X[:, :3]).sum(axis=1, keepdims=True)


def _compare(got: Any, want: Any, rtol: float) -> None:
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w, rtol)
        return
    if isinstance(want, np.ndarray):
        assert type(got) is xp.Array and got.device == xp.Device("cpu"), type(got)
        assert got.shape == want.shape, (got.shape, want.shape)
        got = np.asarray(got)
    else:
        assert not isinstance(got, (np.ndarray, xp.Array)), type(got)
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64),
                               np.asarray(want, dtype=np.float64), rtol=rtol, atol=1e-10)


def _run(call: Callable[[Callable[[np.ndarray], Any]], Any], rtol: float = 1e-7) -> None:
    """`call(convert)` on numpy arrays without dispatch, then on hxarray arrays with it."""
    want = call(np.asarray)
    with sklearn.config_context(array_api_dispatch=True):
        got = call(xp.asarray)
    _compare(got, want, rtol)


ESTIMATORS = {
    "PCA full": (decomposition.PCA(3, svd_solver="full"), "transform"),
    "PCA covariance_eigh": (decomposition.PCA(2, svd_solver="covariance_eigh"), "transform"),
    "PCA randomized": (decomposition.PCA(2, svd_solver="randomized",
                                         power_iteration_normalizer="QR", random_state=0),
                       "transform"),
    "LinearDiscriminantAnalysis": (discriminant_analysis.LinearDiscriminantAnalysis(),
                                   "predict_proba"),
    "Ridge": (linear_model.Ridge(alpha=0.5, solver="svd"), "predict"),
    "RidgeCV": (linear_model.RidgeCV(alphas=(0.1, 1.0, 10.0)), "predict"),
    "RidgeClassifier": (linear_model.RidgeClassifier(solver="svd"), "decision_function"),
    "RidgeClassifierCV": (linear_model.RidgeClassifierCV(alphas=(0.1, 1.0)), "predict"),
    "StandardScaler": (preprocessing.StandardScaler(), "transform"),
    "MinMaxScaler": (preprocessing.MinMaxScaler(), "transform"),
    "MaxAbsScaler": (preprocessing.MaxAbsScaler(), "transform"),
    "Normalizer": (preprocessing.Normalizer(), "transform"),
    "Binarizer": (preprocessing.Binarizer(threshold=0.2), "transform"),
    "PolynomialFeatures": (preprocessing.PolynomialFeatures(2), "transform"),
    "GaussianMixture": (mixture.GaussianMixture(2, init_params="random_from_data",
                                                random_state=0), "predict_proba"),
}


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_estimators_match_numpy(name):
    estimator, method = ESTIMATORS[name]
    target = Y_REGRESS if "Ridge" in name and "Classifier" not in name else Y_CLASS

    def call(convert):
        fitted = sklearn.clone(estimator).fit(convert(X), convert(target))
        return getattr(fitted, method)(convert(X[:10]))

    _run(call, rtol=1e-6)


def test_transformers_on_other_data():
    gram = X @ X.T
    _run(lambda c: preprocessing.KernelCenterer().fit(c(gram)).transform(c(gram)))
    _run(lambda c: preprocessing.LabelEncoder().fit_transform(c(Y_CLASS * 3 + 1)))
    _run(lambda c: preprocessing.StandardScaler().fit(c(X)).inverse_transform(c(X)))


METRICS = {
    "accuracy_score": lambda c: metrics.accuracy_score(c(Y_CLASS), c(np.roll(Y_CLASS, 1))),
    "balanced_accuracy": lambda c: metrics.balanced_accuracy_score(c(Y_CLASS),
                                                                   c(np.roll(Y_CLASS, 1))),
    "f1 macro": lambda c: metrics.f1_score(c(Y_CLASS), c(np.roll(Y_CLASS, 2)), average="macro"),
    "f1 numpy labels": lambda c: metrics.f1_score(Y_CLASS, c(np.roll(Y_CLASS, 2)),
                                                  average="micro"),
    "precision": lambda c: metrics.precision_score(c(Y_BINARY), c(np.roll(Y_BINARY, 1))),
    "recall per class": lambda c: metrics.recall_score(c(Y_CLASS), c(np.roll(Y_CLASS, 1)),
                                                       average=None),
    "fbeta": lambda c: metrics.fbeta_score(c(Y_BINARY), c(np.roll(Y_BINARY, 3)), beta=2.0),
    "jaccard": lambda c: metrics.jaccard_score(c(Y_BINARY), c(np.roll(Y_BINARY, 3))),
    "hamming": lambda c: metrics.hamming_loss(c(Y_CLASS), c(np.roll(Y_CLASS, 1))),
    "zero_one": lambda c: metrics.zero_one_loss(c(Y_CLASS), c(np.roll(Y_CLASS, 1))),
    "confusion_matrix": lambda c: metrics.confusion_matrix(c(Y_CLASS), c(np.roll(Y_CLASS, 1))),
    "multilabel_confusion": lambda c: metrics.multilabel_confusion_matrix(
        c(Y_CLASS), c(np.roll(Y_CLASS, 1))),
    "roc_curve": lambda c: metrics.roc_curve(c(Y_BINARY), c(SCORE)),
    "precision_recall_curve": lambda c: metrics.precision_recall_curve(c(Y_BINARY), c(SCORE)),
    "log_loss": lambda c: metrics.log_loss(c(Y_CLASS), c(PROBA)),
    "brier": lambda c: metrics.brier_score_loss(c(Y_BINARY), c(SCORE)),
    "r2": lambda c: metrics.r2_score(c(Y_REGRESS), c(Y_REGRESS * 0.9)),
    "mse": lambda c: metrics.mean_squared_error(c(Y_REGRESS), c(Y_REGRESS + 1)),
    "rmse": lambda c: metrics.root_mean_squared_error(c(Y_REGRESS), c(Y_REGRESS + 1)),
    "mae": lambda c: metrics.mean_absolute_error(c(Y_REGRESS), c(Y_REGRESS * 1.1)),
    "mape": lambda c: metrics.mean_absolute_percentage_error(c(Y_REGRESS), c(Y_REGRESS * 1.1)),
    "max_error": lambda c: metrics.max_error(c(Y_REGRESS), c(Y_REGRESS * 1.1)),
    "median_ae": lambda c: metrics.median_absolute_error(c(Y_REGRESS), c(Y_REGRESS * 1.1)),
    "explained_variance": lambda c: metrics.explained_variance_score(c(Y_REGRESS),
                                                                     c(Y_REGRESS * 0.8)),
    "pinball": lambda c: metrics.mean_pinball_loss(c(Y_REGRESS), c(Y_REGRESS * 0.8)),
    "poisson deviance (scipy)": lambda c: metrics.mean_poisson_deviance(
        c(X_POSITIVE[:, 0]), c(X_POSITIVE[:, 1])),
    "gamma deviance": lambda c: metrics.mean_gamma_deviance(c(X_POSITIVE[:, 0]),
                                                            c(X_POSITIVE[:, 1])),
    "d2_tweedie": lambda c: metrics.d2_tweedie_score(c(X_POSITIVE[:, 0]), c(X_POSITIVE[:, 1]),
                                                     power=1.5),
    "msle": lambda c: metrics.mean_squared_log_error(c(X_POSITIVE[:, 0]), c(X_POSITIVE[:, 1])),
}


@pytest.mark.parametrize("name", list(METRICS))
def test_metrics_match_numpy(name):
    _run(METRICS[name])


KERNELS = {
    "rbf": lambda c: pairwise.rbf_kernel(c(X), c(X[:7])),
    "linear": lambda c: pairwise.linear_kernel(c(X)),
    "polynomial": lambda c: pairwise.polynomial_kernel(c(X), degree=2),
    "sigmoid": lambda c: pairwise.sigmoid_kernel(c(X[:9])),
    "chi2": lambda c: pairwise.chi2_kernel(c(X_POSITIVE)),
    "additive_chi2": lambda c: pairwise.additive_chi2_kernel(c(X_POSITIVE)),
    "cosine_similarity": lambda c: pairwise.cosine_similarity(c(X)),
    "cosine_distances": lambda c: pairwise.cosine_distances(c(X)),
    "euclidean": lambda c: pairwise.euclidean_distances(c(X), c(X[:5])),
    "pairwise_distances": lambda c: pairwise.pairwise_distances(c(X), metric="cosine"),
    "pairwise_kernels": lambda c: pairwise.pairwise_kernels(c(X), metric="rbf", gamma=0.3),
    "paired_euclidean": lambda c: pairwise.paired_euclidean_distances(c(X), c(X[::-1])),
    "paired_cosine": lambda c: pairwise.paired_cosine_distances(c(X), c(X[::-1])),
}


@pytest.mark.parametrize("name", list(KERNELS))
def test_pairwise_match_numpy(name):
    _run(KERNELS[name])


def test_model_selection_helpers():
    _run(lambda c: model_selection.train_test_split(c(X), c(Y_REGRESS), random_state=0))
    _run(lambda c: model_selection.cross_val_predict(linear_model.Ridge(solver="svd"), c(X),
                                                     c(Y_REGRESS), cv=3))
    _run(lambda c: model_selection.GridSearchCV(
        linear_model.Ridge(solver="svd"), {"alpha": [0.1, 1.0, 10.0]}, cv=3).fit(
        c(X), c(Y_REGRESS)).best_estimator_.coef_)
    _run(lambda c: extmath.randomized_range_finder(c(X), size=3, n_iter=2, random_state=0))


def test_cross_val_score_in_two_worker_processes():
    """joblib's process workers receive pickled hxarray arrays and return numpy's scores."""
    estimator = linear_model.Ridge(solver="svd")
    want = model_selection.cross_val_score(estimator, X, Y_REGRESS, cv=4)
    with sklearn.config_context(array_api_dispatch=True):
        got = model_selection.cross_val_score(estimator, xp.asarray(X), xp.asarray(Y_REGRESS),
                                              cv=4, n_jobs=2)
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=1e-7)


def test_mixed_numpy_and_hxarray_inputs():
    """Everything follows X (estimators) or y_pred (metrics), as scikit-learn documents."""
    with sklearn.config_context(array_api_dispatch=True):
        ridge = linear_model.Ridge(solver="svd").fit(xp.asarray(X), Y_REGRESS,
                                                     sample_weight=np.ones(48))
        assert type(ridge.coef_) is xp.Array
        score = metrics.r2_score(Y_REGRESS, ridge.predict(xp.asarray(X)))
        assert isinstance(score, float)
        assert type(ridge.predict(xp.asarray(X))) is xp.Array
    reference = linear_model.Ridge(solver="svd").fit(X, Y_REGRESS)
    np.testing.assert_allclose(np.asarray(ridge.coef_), reference.coef_, rtol=1e-10)
    assert score == pytest.approx(metrics.r2_score(Y_REGRESS, reference.predict(X)), rel=1e-12)


def test_float32_inputs_stay_float32():
    x32 = X.astype(np.float32)
    with sklearn.config_context(array_api_dispatch=True):
        scaled = preprocessing.StandardScaler().fit_transform(xp.asarray(x32))
        projected = decomposition.PCA(2).fit_transform(xp.asarray(x32))
        kernel = pairwise.rbf_kernel(xp.asarray(x32))
    assert scaled.dtype is projected.dtype is kernel.dtype is xp.float32
    np.testing.assert_allclose(np.asarray(scaled),
                               preprocessing.StandardScaler().fit_transform(x32), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py", "expit", "logit", "logsumexp", "softmax",
                                  "entr", "rel_entr", "erf", "gammaln"])
def test_scipy_special_functions_take_hxarray_arrays(name):
    """scipy (with SCIPY_ARRAY_API=1) dispatches through array-api-compat to hxarray."""
    from scipy import special

    function = getattr(special, name)
    args = (X_POSITIVE[:, 0] / X_POSITIVE[:, 0].max(),)
    if name in ("xlogy", "xlog1py", "rel_entr"):
        args = (*args, X_POSITIVE[:, 1])
    got = function(*(xp.asarray(a) for a in args))
    assert type(got) is xp.Array
    np.testing.assert_allclose(np.asarray(got), function(*args), rtol=1e-12)
