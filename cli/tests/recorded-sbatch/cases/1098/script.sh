#!/bin/bash
#PBS -m abe -M a@b.c
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
